import type { EntityManager } from 'typeorm';

/** How long a key is remembered: a retry within it replays the first response. */
export const IDEMPOTENCY_TTL_HOURS = 24;

/** Identifies one key of one principal for one kind of request. */
export interface IdempotencyKeyRef {
  principalUid: string;
  scope: string;
  key: string;
}

export interface IdempotencyRecord {
  requestHash: string;
  /** Null while the first request with the key is still in flight. */
  response: { status: number; body: unknown; headers: Record<string, string> } | null;
}

/**
 * Claims the key for a request with `requestHash`, forgetting a use of it older than the TTL first.
 * True when this request owns the key; false when a live record holds it.
 */
export async function claimIdempotencyRecord(
  tx: EntityManager,
  ref: IdempotencyKeyRef,
  requestHash: string,
): Promise<boolean> {
  await tx.query(
    `DELETE FROM idempotency_records WHERE principal_uid = $1 AND scope = $2 AND key = $3
        AND created_at < now() - make_interval(hours => $4)`,
    [ref.principalUid, ref.scope, ref.key, IDEMPOTENCY_TTL_HOURS],
  );
  const inserted = (await tx.query(
    `INSERT INTO idempotency_records (principal_uid, scope, key, request_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING key`,
    [ref.principalUid, ref.scope, ref.key, requestHash],
  )) as unknown[];
  return inserted.length > 0;
}

/** The record of a key within its TTL. */
export async function findIdempotencyRecord(
  tx: EntityManager,
  ref: IdempotencyKeyRef,
): Promise<IdempotencyRecord | null> {
  const [row] = (await tx.query(
    `SELECT request_hash, response_status, response_body, response_headers FROM idempotency_records
      WHERE principal_uid = $1 AND scope = $2 AND key = $3 AND created_at >= now() - make_interval(hours => $4)`,
    [ref.principalUid, ref.scope, ref.key, IDEMPOTENCY_TTL_HOURS],
  )) as {
    request_hash: string;
    response_status: number | null;
    response_body: unknown;
    response_headers: Record<string, string> | null;
  }[];
  if (!row) return null;
  return {
    requestHash: row.request_hash,
    response:
      row.response_status === null
        ? null
        : { status: row.response_status, body: row.response_body, headers: row.response_headers ?? {} },
  };
}

export async function storeIdempotencyResponse(
  tx: EntityManager,
  ref: IdempotencyKeyRef,
  response: { status: number; body: unknown; headers: Record<string, string> },
): Promise<void> {
  await tx.query(
    `UPDATE idempotency_records SET response_status = $4, response_body = $5::jsonb, response_headers = $6::jsonb
      WHERE principal_uid = $1 AND scope = $2 AND key = $3`,
    [
      ref.principalUid,
      ref.scope,
      ref.key,
      response.status,
      JSON.stringify(response.body),
      JSON.stringify(response.headers),
    ],
  );
}

export async function deleteIdempotencyRecord(manager: EntityManager, ref: IdempotencyKeyRef): Promise<void> {
  await manager.query(`DELETE FROM idempotency_records WHERE principal_uid = $1 AND scope = $2 AND key = $3`, [
    ref.principalUid,
    ref.scope,
    ref.key,
  ]);
}

/**
 * Deletes up to `batch` records past the TTL, oldest first (through idempotency_records_created);
 * returns how many. The maintenance workflow calls it until it returns less than `batch`.
 */
export async function pruneExpiredIdempotencyRecords(manager: EntityManager, batch: number): Promise<number> {
  // A DELETE answers TypeORM's query() as [rows, count].
  const [, count] = (await manager.query(
    `DELETE FROM idempotency_records WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM idempotency_records WHERE created_at < now() - make_interval(hours => $1)
        ORDER BY created_at LIMIT $2))
     RETURNING 1`,
    [IDEMPOTENCY_TTL_HOURS, batch],
  )) as [unknown[], number];
  return count;
}
