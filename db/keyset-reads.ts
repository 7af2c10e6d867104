import type { EntityManager } from 'typeorm';

/** One sort of a resource list: a sort column and a unique tie-breaker, both in one direction. */
export interface KeysetOrder {
  /** The sort column, e.g. `name` or `created_at`. */
  column: string;
  /** Text sorts byte-wise (`COLLATE "C"`), the same on every database whatever its locale. */
  bytewise?: boolean;
  /** `timestamptz` columns travel in cursors as text with microseconds, so that no tie is lost. */
  type: 'text' | 'timestamptz';
  /** The unique column that breaks ties, e.g. `uid`. */
  key: string;
  keyType?: 'text' | 'uuid';
  direction: 'ASC' | 'DESC';
}

/** Where the previous page ended: its last row's sort value and key, as `KeysetPage.next` gave them. */
export interface KeysetPosition {
  value: string;
  key: string;
}

export interface KeysetPage<Row> {
  rows: Row[];
  /** Where the next page starts; absent on the last page. */
  next?: KeysetPosition;
}

/**
 * A page of `SELECT {columns} FROM {from} WHERE {where}` in `order`, `limit` rows after `after`.
 * The row comparison `(column, key) > (value, key)` is what a (filter…, column, key) index
 * answers by reading just the page.
 */
export async function selectKeysetPage(
  manager: EntityManager,
  query: { columns: string; from: string; where: string; params: unknown[] },
  order: KeysetOrder,
  limit: number,
  after: KeysetPosition | undefined,
): Promise<KeysetPage<Record<string, unknown>>> {
  const params = [...query.params];
  const sortBy = order.bytewise ? `${order.column} COLLATE "C"` : order.column;
  const value =
    order.type === 'timestamptz'
      ? `to_char(${order.column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
      : order.column;
  let where = query.where;
  if (after) {
    params.push(after.value, after.key);
    const cast = order.type === 'timestamptz' ? '::timestamptz' : order.bytewise ? ' COLLATE "C"' : '';
    const op = order.direction === 'ASC' ? '>' : '<';
    where = `(${where}) AND (${sortBy}, ${order.key}) ${op} ($${params.length - 1}${cast}, $${params.length})`;
  }
  params.push(limit + 1);
  const rows = (await manager.query(
    `SELECT ${query.columns}, ${value} AS keyset_value, ${order.key} AS keyset_key FROM ${query.from}
      WHERE ${where}
      ORDER BY ${sortBy} ${order.direction}, ${order.key} ${order.direction}
      LIMIT $${params.length}`,
    params,
  )) as Record<string, unknown>[];
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    rows: page,
    ...(more && last ? { next: { value: String(last.keyset_value), key: String(last.keyset_key) } } : {}),
  };
}

const TIMESTAMP_VALUE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a position (from a cursor, so the caller's) has values PostgreSQL takes for `order`. */
export function isKeysetPosition(order: KeysetOrder, position: KeysetPosition): boolean {
  if (/\u0000/.test(position.value + position.key)) return false;
  if (order.keyType === 'uuid' && !UUID.test(position.key)) return false;
  if (order.type === 'timestamptz') {
    if (!TIMESTAMP_VALUE.test(position.value)) return false;
    // PostgreSQL refuses 30 February rather than rolling it over.
    const millis = new Date(`${position.value.slice(0, 23)}Z`);
    return !Number.isNaN(millis.getTime()) && millis.toISOString().slice(0, 23) === position.value.slice(0, 23);
  }
  return true;
}

/** A page of a list: how many rows, and after which position (none: the first page). */
export interface ResourcePageRequest {
  limit: number;
  after?: KeysetPosition;
}
