import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { ApiError, invalid } from './api-error';

const KEY_RE = /^[\x20-\x7e]{1,255}$/;
const TTL_HOURS = 24;

export interface IdempotencyClaim {
  principalUid: string;
  scope: string;
  key: string;
  hash: string;
}

export interface StoredResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export function readIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  if (!KEY_RE.test(header)) throw invalid('The Idempotency-Key header must be 1-255 printable ASCII characters.');
  return header;
}

export function requestHash(body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(body ?? null)))
    .digest('hex');
}

/** JSON members are unordered: the same body with its members in another order is the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

/**
 * Claims an idempotency key inside the caller's transaction. A concurrent request with the same
 * key waits on the row lock until the first one commits, then replays its response.
 * Returns the stored response to replay, or null when this request owns the key.
 */
export async function claimIdempotencyKey(tx: EntityManager, claim: IdempotencyClaim): Promise<StoredResponse | null> {
  await tx.query(
    `DELETE FROM idempotency_records WHERE principal_uid = $1 AND scope = $2 AND key = $3
        AND created_at < now() - make_interval(hours => $4)`,
    [claim.principalUid, claim.scope, claim.key, TTL_HOURS],
  );
  const inserted = (await tx.query(
    `INSERT INTO idempotency_records (principal_uid, scope, key, request_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING key`,
    [claim.principalUid, claim.scope, claim.key, claim.hash],
  )) as unknown[];
  if (inserted.length > 0) return null;
  const [existing] = (await tx.query(
    `SELECT request_hash, response_status, response_body, response_headers FROM idempotency_records
      WHERE principal_uid = $1 AND scope = $2 AND key = $3`,
    [claim.principalUid, claim.scope, claim.key],
  )) as {
    request_hash: string;
    response_status: number | null;
    response_body: unknown;
    response_headers: Record<string, string> | null;
  }[];
  if (!existing || existing.response_status === null) {
    throw new ApiError('conflict', 'A request with this Idempotency-Key is still in flight; retry shortly.');
  }
  if (existing.request_hash !== claim.hash) {
    throw new ApiError(
      'conflict',
      'This Idempotency-Key was already used with a different request body; use a new key.',
      // The same request can never succeed: a retry would only meet the same record.
      { retryable: false },
    );
  }
  return { status: existing.response_status, body: existing.response_body, headers: existing.response_headers ?? {} };
}

export async function storeIdempotentResponse(
  tx: EntityManager,
  claim: { principalUid: string; scope: string; key: string },
  response: StoredResponse,
): Promise<void> {
  await tx.query(
    `UPDATE idempotency_records SET response_status = $4, response_body = $5::jsonb, response_headers = $6::jsonb
      WHERE principal_uid = $1 AND scope = $2 AND key = $3`,
    [
      claim.principalUid,
      claim.scope,
      claim.key,
      response.status,
      JSON.stringify(response.body),
      JSON.stringify(response.headers),
    ],
  );
}

/** Forgets a claimed key whose request was taken back, so that a retry with it is served afresh. */
export async function releaseIdempotencyKey(
  manager: EntityManager,
  claim: { principalUid: string; scope: string; key: string },
): Promise<void> {
  await manager.query(`DELETE FROM idempotency_records WHERE principal_uid = $1 AND scope = $2 AND key = $3`, [
    claim.principalUid,
    claim.scope,
    claim.key,
  ]);
}
