import { invalid } from '../core/api-error';

type Query = Record<string, string | string[] | undefined>;

/** A query parameter given at most once. */
export function singleQueryParameter(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalid(`Query parameter \`${name}\` may be given only once.`);
  return value;
}

/** `limit`, an integer from 1 to `max`; `fallback` when absent. */
export function parseLimit(query: Query, fallback: number, max: number): number {
  const raw = singleQueryParameter(query, 'limit');
  const limit = raw === undefined ? fallback : Number(raw);
  if (!/^\d+$/.test(raw ?? String(fallback)) || limit < 1 || limit > max) {
    throw invalid(`Query parameter \`limit\` must be an integer from 1 to ${max} (got "${raw}").`);
  }
  return limit;
}

/** The 400 for a cursor that does not decode to what this service issues. */
export function cursorNotIssued(): Error {
  return invalid(
    'Query parameter `cursor` is not a cursor this service issued; pass `page_info.next_cursor` unchanged.',
  );
}

/** `page_info.next_cursor`: the keyset position, as base64url JSON. */
export function encodeOpaqueCursor(payload: object): string {
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

/** The object inside a cursor; its fields are still the caller's to check. */
export function decodeOpaqueCursor(cursor: string): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw cursorNotIssued();
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw cursorNotIssued();
  return payload as Record<string, unknown>;
}
