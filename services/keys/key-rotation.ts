import type { EntityManager } from 'typeorm';
import { insertApiKey, lockKeysToRotate, retireRotatedKey, type CreatedKey, type KeyToRotate } from '../../db/api-keys';
import { KeyRequestError } from './key-errors';

/** How long a rotated key keeps working when the rotation does not say: a day to hand the new key out. */
export const DEFAULT_GRACE_SECONDS = 86_400;

export interface RotationOptions {
  /** How long the old key keeps working (default DEFAULT_GRACE_SECONDS); 0 revokes it at once. */
  graceSeconds?: number;
  /** The new key's lifetime; absent: the old key's (created_at to expires_at), or none if it had none. */
  expiresInSeconds?: number;
}

export interface RotatedKey {
  /** The new key: the old one's holder, team, kind and role. */
  created: CreatedKey;
  /** The old key: until when it works (expiresAt), or when it was revoked (grace 0). */
  old: { id: string; prefix: string; expiresAt: Date | null; revokedAt: Date | null };
}

/**
 * Replaces an active key (by id or public prefix) with a new one of the same holder, team, kind
 * and role. The old key keeps working for the grace period (its expires_at, brought forward,
 * never pushed back) and is revoked at once without one. A key rotates once: the new key is the
 * one to rotate next. Refusals are KeyRequestErrors and change nothing.
 */
export async function rotateApiKey(
  tx: EntityManager,
  idOrPrefix: string,
  options: RotationOptions,
): Promise<RotatedKey> {
  if (options.expiresInSeconds !== undefined && options.expiresInSeconds <= 0) {
    throw new KeyRequestError('A key must expire later than now.');
  }
  if (options.graceSeconds !== undefined && options.graceSeconds < 0) {
    throw new KeyRequestError('A grace period cannot be negative.');
  }
  const old = rotatable(await lockKeysToRotate(tx, idOrPrefix), idOrPrefix);
  const created = await insertApiKey(
    tx,
    old.holder,
    old.kind,
    old.role,
    options.expiresInSeconds ?? lifetimeSeconds(old),
  );
  const retired = await retireRotatedKey(tx, old.id, created.id, options.graceSeconds ?? DEFAULT_GRACE_SECONDS);
  return { created, old: { id: old.id, prefix: old.prefix, ...retired } };
}

/** The one active key of those `idOrPrefix` named, or the refusal that says why there is none. */
function rotatable(keys: KeyToRotate[], idOrPrefix: string): KeyToRotate {
  if (keys.length === 0) throw new KeyRequestError(`No key with id or prefix ${idOrPrefix}.`);
  if (keys.length > 1) {
    throw new KeyRequestError(
      `The prefix ${idOrPrefix} names ${keys.length} keys; rotate by id (npm run keys -- list).`,
    );
  }
  const key = keys[0]!;
  if (key.revokedAt) throw new KeyRequestError(`Key ${idOrPrefix} was revoked at ${key.revokedAt.toISOString()}.`);
  if (key.replacedBy) {
    throw new KeyRequestError(
      `Key ${idOrPrefix} was already rotated; rotate the key that replaced it, ${key.replacedBy}.`,
    );
  }
  if (key.expired) {
    throw new KeyRequestError(
      `Key ${idOrPrefix} expired at ${key.expiresAt!.toISOString()}; make a new one with npm run keys -- create.`,
    );
  }
  return key;
}

/** How long the old key was made to last, in whole seconds; null for a key that never expires. */
function lifetimeSeconds(key: KeyToRotate): number | null {
  if (!key.expiresAt) return null;
  return Math.max(1, Math.round((key.expiresAt.getTime() - key.createdAt.getTime()) / 1000));
}
