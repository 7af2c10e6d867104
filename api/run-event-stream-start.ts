import { invalid } from '../core/api-error';
import { singleQueryParameter } from './page-params';

/** Where a run's event stream starts, read from its request (`?after=`, `Last-Event-ID`). */

type Query = Record<string, string | string[] | undefined>;

/** The `Last-Event-ID` header as sent (an empty one too), or undefined when there is none. */
export function lastEventIdOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['last-event-id'];
  return Array.isArray(value) ? value.join(',') : value;
}

/**
 * Where a stream starts: after the event id of `?after=` or else of the `Last-Event-ID` header
 * (what an EventSource sends when it reconnects); from the first event without either.
 */
export function parseStreamStart(query: Query, lastEventId: string | undefined): string {
  const after = singleQueryParameter(query, 'after');
  // Compared in SQL as a bigint: a value out of its range must not reach the query. Each one
  // given is checked, even when `after` wins, so that a malformed request never streams.
  const check = (name: string, value: string) => {
    if (!/^\d{1,18}$/.test(value)) {
      throw invalid(`${name} must be an event id, a non-negative integer of at most 18 digits (got "${value}").`);
    }
  };
  if (lastEventId !== undefined) check('Header `Last-Event-ID`', lastEventId);
  if (after !== undefined) check('Query parameter `after`', after);
  return after ?? lastEventId ?? '0';
}
