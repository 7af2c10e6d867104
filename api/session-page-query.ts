import { invalid } from '../core/api-error';
import { singleQueryParameter } from './page-params';

type Query = Record<string, string | string[] | undefined>;

/** Which events a transcript page shows: after an event id, before one, or (neither) the newest. */
export type SessionPageRange = { afterId: string } | { beforeId: string } | Record<string, never>;

function eventId(query: Query, name: 'after' | 'before'): string | undefined {
  const value = singleQueryParameter(query, name);
  // Compared in SQL as a bigint: a value out of its range must not reach the query.
  if (value !== undefined && !/^\d{1,18}$/.test(value)) {
    throw invalid(`Query parameter \`${name}\` must be an event id, an integer of at most 18 digits (got "${value}").`);
  }
  return value;
}

/**
 * `after` and `before` of `GET /sessions/{id}`. Other parameters are ignored, unlike on the API:
 * the page is opened from shared links, and chat apps append tracking parameters to those.
 */
export function parseSessionPageQuery(query: Query): SessionPageRange {
  const afterId = eventId(query, 'after');
  const beforeId = eventId(query, 'before');
  if (afterId !== undefined && beforeId !== undefined) {
    throw invalid('Query parameters `after` and `before` cannot be combined; give one of them.');
  }
  if (afterId !== undefined) return { afterId };
  if (beforeId !== undefined) return { beforeId };
  return {};
}
