import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { DIAGNOSTIC_CODES, type Report } from './diagnostics';
import { factorySchemaDocuments, type FactorySchemaVersion } from './schema-documents';
import type { SourcePosition } from './yaml-source';

const compiled = new Map<string, ValidateFunction>();

/** The compiled validator of one document of a version (its siblings added for `$ref`s), built once. */
function validatorOf(version: FactorySchemaVersion, document: string): ValidateFunction {
  const key = `${version}/${document}`;
  let validate = compiled.get(key);
  if (!validate) {
    const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true });
    for (const doc of Object.values(factorySchemaDocuments(version))) ajv.addSchema(doc);
    validate = ajv.getSchema(document);
    if (!validate) throw new Error(`No factory file schema ${document} in ${version}`);
    compiled.set(key, validate);
  }
  return validate;
}

/**
 * Checks `value` against a document of the format and reports each violation at its place in
 * the file, in words that say what to write instead.
 */
export function checkAgainstSchema(
  version: FactorySchemaVersion,
  document: string,
  value: unknown,
  positionOf: (pointer: string, key?: boolean) => SourcePosition,
  what: string,
  report: Report,
): boolean {
  const validate = validatorOf(version, document);
  if (validate(value)) return true;
  for (const error of validate.errors ?? []) {
    const { code, message, pointer, atKey } = describeError(error, what);
    // Past the cap only the count matters: no need to find where each one is.
    report(code, message, report.full() ? undefined : positionOf(pointer, atKey));
  }
  return false;
}

interface Described {
  code: (typeof DIAGNOSTIC_CODES)[keyof typeof DIAGNOSTIC_CODES];
  message: string;
  pointer: string;
  atKey?: boolean;
}

function describeError(error: ErrorObject, what: string): Described {
  const pointer = error.instancePath;
  const field = fieldName(pointer);
  const schema = (error.parentSchema ?? {}) as { description?: string; properties?: Record<string, unknown> };
  const got = `got ${describeValue(error.data)}`;
  switch (error.keyword) {
    case 'additionalProperties': {
      const name = String((error.params as { additionalProperty: string }).additionalProperty);
      const allowed = Object.keys(schema.properties ?? {}).join(', ');
      return {
        code: DIAGNOSTIC_CODES.unknownField,
        message: `unknown field \`${field ? `${field}.` : ''}${name}\`; ${what} takes only ${allowed} (remove it or correct its spelling)`,
        pointer: `${pointer}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        atKey: true,
      };
    }
    case 'required': {
      const name = String((error.params as { missingProperty: string }).missingProperty);
      return {
        code: DIAGNOSTIC_CODES.missingField,
        message: `\`${field ? `${field}.` : ''}${name}\` is required in ${what}`,
        pointer,
      };
    }
    case 'type':
      return {
        code: DIAGNOSTIC_CODES.invalidType,
        message:
          pointer === ''
            ? `${what} must be a YAML mapping of fields; ${got}`
            : `\`${field}\` must be ${article(String((error.params as { type: string }).type))}; ${got}${quoteHint(error)}`,
        pointer,
      };
    case 'maxLength':
      return {
        code: DIAGNOSTIC_CODES.invalidValue,
        message: `\`${field}\` is ${String(error.data).length} characters; at most ${(error.params as { limit: number }).limit}`,
        pointer,
      };
    case 'minLength':
      return { code: DIAGNOSTIC_CODES.invalidValue, message: `\`${field}\` must not be empty`, pointer };
    case 'maxItems':
      return {
        code: DIAGNOSTIC_CODES.invalidValue,
        message: `\`${field}\` has ${(error.data as unknown[]).length} items; at most ${(error.params as { limit: number }).limit}`,
        pointer,
      };
    default:
      return {
        code: DIAGNOSTIC_CODES.invalidValue,
        message: `\`${field}\` must be ${schema.description ?? error.message ?? 'valid'}; ${got}${caseHint(error)}`,
        pointer,
      };
  }
}

/** `/skills/2` → `skills[2]`. */
export function fieldName(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (name, segment) => (/^\d+$/.test(segment) ? `${name}[${segment}]` : name ? `${name}.${segment}` : segment),
      '',
    );
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = JSON.stringify(value);
  return `${typeof value} ${text.length > 80 ? `${text.slice(0, 77)}…"` : text}`;
}

function article(type: string): string {
  return (
    { string: 'a string', array: 'a list', object: 'a mapping', number: 'a number', boolean: 'true or false' }[type] ??
    type
  );
}

function quoteHint(error: ErrorObject): string {
  const type = (error.params as { type?: string }).type;
  return type === 'string' && (typeof error.data === 'number' || typeof error.data === 'boolean') ? ' (quote it)' : '';
}

function caseHint(error: ErrorObject): string {
  if (error.keyword !== 'enum' || typeof error.data !== 'string') return '';
  const upper = error.data.trim().toUpperCase();
  return (error.params as { allowedValues: unknown[] }).allowedValues.includes(upper) ? ` (write it as ${upper})` : '';
}
