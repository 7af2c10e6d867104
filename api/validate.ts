import type { z } from 'zod';
import { invalid } from './api-error';

/** Parses `value` with a schema; on failure throws a 400 whose detail names each bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what = 'body'): z.infer<S> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  throw invalid(describeIssues(result.error.issues, what));
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
