/**
 * PostgreSQL text and jsonb cannot hold NUL, so every string of a request is refused with a 400
 * when it contains one, keys of objects included (api/validate.ts, api/list-runs-query.ts). The
 * document says so: each string schema a request reaches gets a pattern without NUL, unless it
 * already has one (those patterns all exclude NUL) or allows fixed values only.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function isStringSchema(schema: Json): boolean {
  const type = schema.type;
  return type === 'string' || (Array.isArray(type) && type.includes('string'));
}

/** Adds the pattern to the string schemas of request parameters and bodies, and of the components they use. */
export function forbidNulInRequests(document: Json): void {
  const components = (
    isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : {}
  ) as Record<string, Json>;
  const visited = new Set<Json>();

  const visit = (schema: unknown): void => {
    if (!isObject(schema) || visited.has(schema)) return;
    visited.add(schema);
    const ref = schema.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      visit(components[ref.slice('#/components/schemas/'.length)]);
      return;
    }
    const fixed = 'enum' in schema || 'const' in schema || 'format' in schema;
    if (isStringSchema(schema) && !fixed && schema.pattern === undefined) schema.pattern = NO_NUL_PATTERN;
    const open = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
    if (open && schema.propertyNames === undefined) schema.propertyNames = { pattern: NO_NUL_PATTERN };
    for (const key of ['items', 'additionalProperties', 'propertyNames', 'not']) visit(schema[key]);
    for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      if (Array.isArray(schema[key])) for (const sub of schema[key]) visit(sub);
    }
    if (isObject(schema.properties)) for (const sub of Object.values(schema.properties)) visit(sub);
  };

  for (const item of Object.values((document.paths ?? {}) as Record<string, Json>)) {
    for (const operation of Object.values(item)) {
      if (!isObject(operation)) continue;
      if (Array.isArray(operation.parameters)) {
        for (const parameter of operation.parameters) if (isObject(parameter)) visit(parameter.schema);
      }
      const content = isObject(operation.requestBody) ? operation.requestBody.content : undefined;
      if (isObject(content)) for (const media of Object.values(content)) if (isObject(media)) visit(media.schema);
    }
  }
}
