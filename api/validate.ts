import type { z } from 'zod';
import { invalid, notFound } from '../core/api-error';

/** Parses `value` with a schema; on failure throws a 400 whose detail names each bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what = 'body'): z.infer<S> {
  // With the input in each issue, a field of the wrong type is told apart from a missing one.
  const result = schema.safeParse(value ?? {}, { reportInput: true });
  if (!result.success) throw invalid(describeIssues(result.error.issues, what));
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

export function describeIssues(issues: readonly z.core.$ZodIssue[], what: string): string {
  return issues
    .slice(0, 10)
    .map((issue) => {
      const where = issue.path.length ? issue.path.map(String).join('.') : what;
      if (issue.code === 'unrecognized_keys') {
        const prefix = issue.path.length ? `${where}.` : '';
        return `Unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `\`${prefix}${k}\``).join(', ')}.`;
      }
      if (issue.code === 'invalid_type' && issue.input === undefined) return `\`${where}\` is required.`;
      return `\`${where}\`: ${issue.message}.`;
    })
    .join(' ');
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

/** For routes that take no query parameters: any is unknown, and rejected like an unknown field. */
export function rejectQueryParameters(query: Record<string, unknown>): void {
  const [name] = Object.keys(query);
  if (name !== undefined) throw invalid(`Unknown query parameter \`${name}\`.`);
}
