/** Reads one value of a FACTORY.md, reporting what is wrong with it at its path. */
export type Add = (path: string, message: string) => void;

export function requiredString(value: unknown, path: string, add: Add): string | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && !value.trim())) {
    add(path, 'is required (a non-empty string)');
    return undefined;
  }
  if (typeof value !== 'string') {
    add(path, `must be a string; got ${describe(value)} (quote it)`);
    return undefined;
  }
  return value.trim();
}

/** The string, '' when absent; undefined when it is not a string (reported). */
export function optionalString(value: unknown, path: string, add: Add): string | undefined {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') {
    add(path, `must be a string; got ${describe(value)}`);
    return undefined;
  }
  return value.trim();
}

export function maxChars(value: string, limit: number, path: string, add: Add): void {
  if (value.length > limit) add(path, `is ${value.length} characters; at most ${limit}`);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}
