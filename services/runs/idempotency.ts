import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { claimIdempotencyRecord, findIdempotencyRecord } from '../../db/idempotency-records';
import { ApiError, invalid } from '../../core/api-error';

const KEY_RE = /^[\x20-\x7e]{1,255}$/;

export interface IdempotencyClaim {
  principalUid: string;
  scope: string;
  key: string;
  hash: string;
  /** The hashes of the same request under the secrets keyring's older keys: a retry across a rotation still matches. */
  formerHashes?: string[];
}

/** Whether the hash a key's first request recorded is this claim's request. */
export const claimMatches = (claim: IdempotencyClaim, recordedHash: string): boolean =>
  recordedHash === claim.hash || (claim.formerHashes ?? []).includes(recordedHash);

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
  if (await claimIdempotencyRecord(tx, claim, claim.hash)) return null;
  const existing = await findIdempotencyRecord(tx, claim);
  if (!existing?.response) {
    throw new ApiError('conflict', 'A request with this Idempotency-Key is still in flight; retry shortly.');
  }
  if (!claimMatches(claim, existing.requestHash)) {
    throw new ApiError(
      'conflict',
      'This Idempotency-Key was already used with a different request body; use a new key.',
      // The same request can never succeed: a retry would only meet the same record.
      { retryable: false },
    );
  }
  return asReplay(existing.response);
}

/**
 * The stored response of a request replayed with its Idempotency-Key, marked as such: its body
 * is the first answer's (a run's state then, not now), which `Idempotent-Replayed: true` says.
 */
export function asReplay(response: StoredResponse): StoredResponse {
  return { ...response, headers: { ...response.headers, [REPLAYED_HEADER]: 'true' } };
}

export const REPLAYED_HEADER = 'Idempotent-Replayed';
