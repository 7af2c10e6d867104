import { closest, distance } from 'fastest-levenshtein';
import type { z } from 'zod';
import { invalid, notFound, type ApiError } from '../core/api-error';

/** Parses `value` with a schema; on failure throws a 400 whose detail names each bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what = 'body'): z.infer<S> {
  // With the input in each issue, a field of the wrong type is told apart from a missing one.
  const result = schema.safeParse(value ?? {}, { reportInput: true });
  if (!result.success) throw invalid(describeIssues(result.error.issues, what, schema));
  const bad = findUnstorableString(result.data, []);
  if (bad) throw invalid(`\`${bad.path.length ? bad.path.join('.') : what}\` ${bad.problem}.`);
  return result.data;
}

/** NUL, which PostgreSQL text and jsonb cannot hold, or an unpaired UTF-16 surrogate, which jsonb rejects. */
export function unstorableProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'may not contain NUL characters';
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value)) {
    return 'may not contain unpaired UTF-16 surrogates';
  }
  return undefined;
}

/** The first string (or key) PostgreSQL cannot store; iterative, whatever the depth. */
function findUnstorableString(root: unknown, rootPath: string[]): { path: string[]; problem: string } | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value: root, path: rootPath }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = unstorableProblem(value);
      if (problem) return { path, problem };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    const entries = Object.entries(value);
    for (const [key] of entries) {
      const keyProblem = unstorableProblem(key);
      if (keyProblem) return { path, problem: `has a key that ${keyProblem}` };
    }
    // Pushed in reverse: the first field is looked at first, as a reader would.
    for (const [key, child] of entries.reverse()) stack.push({ value: child, path: [...path, key] });
  }
  return undefined;
}

export function describeIssues(issues: readonly z.core.$ZodIssue[], what: string, schema?: z.ZodType): string {
  return issues
    .slice(0, 10)
    .map((issue) => {
      const where = issue.path.length ? issue.path.map(String).join('.') : what;
      if (issue.code === 'unrecognized_keys') {
        const prefix = issue.path.length ? `${where}.` : '';
        const known = schema ? knownKeysAt(schema, issue.path) : [];
        const names = issue.keys.map((key) => withSuggestion(key, known, prefix));
        return `Unknown field${issue.keys.length > 1 ? 's' : ''} ${names.join(', ')}.`;
      }
      if (issue.code === 'invalid_type' && issue.input === undefined) return `\`${where}\` is required.`;
      return `\`${where}\`: ${issue.message}.`;
    })
    .join(' ');
}

/** `name` in backquotes, with the known name it is probably a slip for: `promt` (did you mean `prompt`?). */
function withSuggestion(name: string, known: readonly string[], prefix = ''): string {
  const near = nearestName(name, known);
  return `\`${prefix}${name}\`${near === undefined ? '' : ` (did you mean \`${prefix}${near}\`?)`}`;
}

/**
 * The known name closest to `name` when it is close enough to be a slip (`promt` for `prompt`,
 * `modelId` for `model_id`): at most a third of its letters apart, compared without case, `-`
 * or `_`. Undefined when none is.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const fold = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  const folded = new Map(known.map((k) => [fold(k), k]));
  const best = closest(fold(name), [...folded.keys()]);
  const limit = Math.max(1, Math.floor(Math.max(name.length, best.length) / 3));
  return distance(fold(name), best) <= limit ? folded.get(best) : undefined;
}

/** What Zod keeps of a schema, enough to walk to the object at a path. */
interface SchemaDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: readonly z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  getter?: () => z.ZodType;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

/** The field names the object schema(s) at `path` know, through optional, default, pipes, arrays, records and unions. */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[], depth = 0): string[] {
  const def = defOf(schema);
  if (depth > 64) return [];
  const inner = def.innerType ?? def.in ?? def.getter?.();
  if (inner) return knownKeysAt(inner, path, depth + 1);
  if (def.options) return [...new Set(def.options.flatMap((o) => knownKeysAt(o, path, depth + 1)))];
  if (def.left && def.right)
    return [...knownKeysAt(def.left, path, depth + 1), ...knownKeysAt(def.right, path, depth + 1)];
  const [head, ...rest] = path;
  if (def.type === 'object' && def.shape) {
    if (head === undefined) return Object.keys(def.shape);
    const field = def.shape[String(head)];
    return field ? knownKeysAt(field, rest, depth + 1) : [];
  }
  const items = def.element ?? def.valueType;
  return items && head !== undefined ? knownKeysAt(items, rest, depth + 1) : [];
}

/**
 * For `router.param`: an id in a path that no row can have (NUL, which PostgreSQL text cannot
 * hold, or an unpaired surrogate) is a 404 like any other unknown id, before it reaches a query.
 */
export function storablePathId(what: string) {
  return (value: string, _ctx: unknown, next: () => Promise<unknown>) => {
    if (unstorableProblem(value)) throw notFound(`No ${what} ${JSON.stringify(value)}.`);
    return next();
  };
}

/** The 400 for a query parameter not among `known`, suggesting the known one it is probably a slip for. */
export function unknownQueryParameter(name: string, known: readonly string[]): ApiError {
  return invalid(`Unknown query parameter ${withSuggestion(name, known)}.`);
}

/** Rejects the first query parameter not among `known` (for routes that take none: any). */
export function rejectQueryParameters(query: Record<string, unknown>, known: readonly string[] = []): void {
  const name = Object.keys(query).find((key) => !known.includes(key));
  if (name !== undefined) throw unknownQueryParameter(name, known);
}
