import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import type { ApiKeyKind, KeyRole } from './rows/api-key';
import { hashKey, type KeyHolder } from './api-key-reads';

const KEY_PREFIX = 'ark';

export interface CreatedKey {
  id: string;
  rawKey: string;
  prefix: string;
  principalUid: string;
  teamId: string;
  role: KeyRole;
  expiresAt: Date | null;
}

/** Keys look like `ark_<8-char public prefix>_<secret>`; the prefix alone is safe to log. */
export function generateRawKey(): { rawKey: string; prefix: string } {
  const prefix = randomBytes(6).toString('base64url');
  const secret = randomBytes(32).toString('base64url');
  return { rawKey: `${KEY_PREFIX}_${prefix}_${secret}`, prefix: `${KEY_PREFIX}_${prefix}` };
}

/** The team of that name, created when first named; returns its id. */
export async function ensureTeam(tx: EntityManager, name: string): Promise<string> {
  await tx.query(`INSERT INTO teams (id, name) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [newUuidV7(), name]);
  const [team] = (await tx.query(`SELECT id FROM teams WHERE name = $1`, [name])) as { id: string }[];
  return team!.id;
}

/** The team's user of that name, created when first named. */
export async function ensureUser(tx: EntityManager, teamId: string, name: string): Promise<KeyHolder> {
  await tx.query(
    `INSERT INTO principals (uid, team_id, type, display_name) VALUES ($1, $2, 'user', $3)
     ON CONFLICT (team_id, type, display_name) DO NOTHING`,
    [`usr_${randomBytes(12).toString('base64url')}`, teamId, name],
  );
  const [user] = (await tx.query(
    `SELECT uid FROM principals WHERE team_id = $1 AND type = 'user' AND display_name = $2`,
    [teamId, name],
  )) as { uid: string }[];
  return { uid: user!.uid, teamId, name };
}

/** Inserts a new key of `holder`, expiring `expiresInSeconds` from now (null: never); the raw key is in the answer only. */
export async function insertApiKey(
  tx: EntityManager,
  holder: KeyHolder,
  kind: ApiKeyKind,
  role: KeyRole,
  expiresInSeconds: number | null,
): Promise<CreatedKey> {
  const { rawKey, prefix } = generateRawKey();
  const id = newUuidV7();
  const [row] = (await tx.query(
    `INSERT INTO api_keys (id, principal_uid, team_id, kind, name, prefix, secret_hash, role, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + $9 * interval '1 second')
     RETURNING expires_at`,
    [id, holder.uid, holder.teamId, kind, holder.name, prefix, hashKey(rawKey), role, expiresInSeconds],
  )) as { expires_at: Date | null }[];
  return { id, rawKey, prefix, principalUid: holder.uid, teamId: holder.teamId, role, expiresAt: row!.expires_at };
}

/** The condition naming a key by its id or its public prefix (`$1`). */
function keyNamed(idOrPrefix: string): string {
  return /^[0-9a-f-]{36}$/.test(idOrPrefix) ? 'id::text = $1' : 'prefix = $1';
}

/** A key a change found: which, whose team, and its role before the change. */
export interface ChangedKey {
  id: string;
  prefix: string;
  teamId: string;
  previousRole: KeyRole;
}

/** Gives an active key (by id or public prefix) a role; null when no active key matched. */
export async function setApiKeyRole(
  dataSource: DataSource,
  idOrPrefix: string,
  role: KeyRole,
): Promise<ChangedKey | null> {
  return changeActiveKey(dataSource, idOrPrefix, 'role = $2', [role]);
}

/** Revokes by key id or public prefix; null when no active key matched. */
export async function revokeApiKey(dataSource: DataSource, idOrPrefix: string): Promise<ChangedKey | null> {
  return changeActiveKey(dataSource, idOrPrefix, 'revoked_at = now()', []);
}

async function changeActiveKey(
  dataSource: DataSource,
  idOrPrefix: string,
  assignment: string,
  params: unknown[],
): Promise<ChangedKey | null> {
  const [rows] = (await dataSource.query(
    `WITH old AS (SELECT id, role FROM api_keys WHERE ${keyNamed(idOrPrefix)} AND revoked_at IS NULL FOR UPDATE)
     UPDATE api_keys k SET ${assignment} FROM old WHERE k.id = old.id
     RETURNING k.id, k.prefix, k.team_id, old.role AS previous_role`,
    [idOrPrefix, ...params],
  )) as [{ id: string; prefix: string; team_id: string; previous_role: KeyRole }[], number];
  const row = rows[0];
  return row ? { id: row.id, prefix: row.prefix, teamId: row.team_id, previousRole: row.previous_role } : null;
}

/** A key as a rotation sees it, locked until its transaction ends. */
export interface KeyToRotate {
  id: string;
  prefix: string;
  kind: ApiKeyKind;
  role: KeyRole;
  holder: KeyHolder;
  createdAt: Date;
  expiresAt: Date | null;
  /** Whether expires_at has passed, by the database's clock. */
  expired: boolean;
  revokedAt: Date | null;
  replacedBy: string | null;
}

/** Every key of that id or public prefix (a prefix may, rarely, name more than one), locked for a rotation. */
export async function lockKeysToRotate(tx: EntityManager, idOrPrefix: string): Promise<KeyToRotate[]> {
  const rows = (await tx.query(
    `SELECT id, prefix, kind, role, principal_uid, team_id, name, created_at, expires_at,
            COALESCE(expires_at <= now(), false) AS expired, revoked_at, replaced_by
       FROM api_keys WHERE ${keyNamed(idOrPrefix)} FOR UPDATE`,
    [idOrPrefix],
  )) as {
    id: string;
    prefix: string;
    kind: ApiKeyKind;
    role: KeyRole;
    principal_uid: string;
    team_id: string;
    name: string;
    created_at: Date;
    expires_at: Date | null;
    expired: boolean;
    revoked_at: Date | null;
    replaced_by: string | null;
  }[];
  return rows.map((r) => ({
    id: r.id,
    prefix: r.prefix,
    kind: r.kind,
    role: r.role,
    holder: { uid: r.principal_uid, teamId: r.team_id, name: r.name },
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    expired: r.expired,
    revokedAt: r.revoked_at,
    replacedBy: r.replaced_by,
  }));
}

/**
 * Marks `oldId` as replaced by `newId`. With a grace period its expires_at comes forward to the
 * end of it (never later than it was); without one it is revoked now.
 */
export async function retireRotatedKey(
  tx: EntityManager,
  oldId: string,
  newId: string,
  graceSeconds: number,
): Promise<{ expiresAt: Date | null; revokedAt: Date | null }> {
  const [rows] = (await tx.query(
    `UPDATE api_keys
        SET replaced_by = $2,
            expires_at = CASE WHEN $3 > 0 THEN LEAST(expires_at, now() + $3 * interval '1 second') ELSE expires_at END,
            revoked_at = CASE WHEN $3 > 0 THEN revoked_at ELSE now() END
      WHERE id = $1
      RETURNING expires_at, revoked_at`,
    [oldId, newId, graceSeconds],
  )) as [{ expires_at: Date | null; revoked_at: Date | null }[], number];
  const retired = rows[0]!;
  return { expiresAt: retired.expires_at, revokedAt: retired.revoked_at };
}

/** A key's latest use that an API noted. */
export interface KeyUse {
  keyId: string;
  usedAt: Date;
}

/**
 * Writes keys' last_used_at in one statement, each only when the stored value is at least
 * `minGapMs` older than the new one: however many API processes note a key's uses, its row is
 * written at most once per `minGapMs` (last_used_at is then up to that much behind).
 */
export async function recordKeysLastUsed(dataSource: DataSource, uses: KeyUse[], minGapMs: number): Promise<void> {
  if (uses.length === 0) return;
  await dataSource.query(
    `UPDATE api_keys k SET last_used_at = u.used_at
       FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
      WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at <= u.used_at - $3 * interval '1 millisecond')`,
    [uses.map((u) => u.keyId), uses.map((u) => u.usedAt.toISOString()), minGapMs],
  );
}
