import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { ApiKey, ApiKeyKind, KeyRole } from './rows/api-key';
import type { PrincipalType } from './rows/principal';

export interface AuthenticatedPrincipal {
  uid: string;
  type: PrincipalType;
  displayName: string;
  teamId: string;
  keyId: string;
  /** The key's public prefix (`ark_xxxxxxxx`): safe to log and record. */
  keyPrefix: string;
  role: KeyRole;
  /** When the key stops working (null: never), as it was when the request authenticated. */
  expiresAt: Date | null;
}

/** What a key's hash found: its principal, or that it expired (when, and whether a rotation replaced it). */
export type KeyAuthentication =
  | { ok: true; principal: AuthenticatedPrincipal }
  | { ok: false; expiredAt: Date; replaced: boolean; principal: AuthenticatedPrincipal };

export function hashKey(rawKey: string): string {
  return createHash('sha256').update(rawKey).digest('hex');
}

export function looksLikeKey(value: string): boolean {
  return /^ark_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{43}$/.test(value);
}

/** The agent identity of that uid as a key holder, if it exists. */
export async function findAgentKeyHolder(manager: EntityManager, agentUid: string): Promise<KeyHolder | null> {
  const [identity] = (await manager.query(`SELECT uid, team_id, name FROM agent_identities WHERE uid = $1`, [
    agentUid,
  ])) as { uid: string; team_id: string; name: string }[];
  return identity ? { uid: identity.uid, teamId: identity.team_id, name: identity.name } : null;
}

/** Who a key is for: a user or an agent identity of a team. */
export interface KeyHolder {
  uid: string;
  teamId: string;
  name: string;
}

export interface ListedKey {
  id: string;
  kind: ApiKeyKind;
  name: string;
  prefix: string;
  team: string;
  principalUid: string;
  role: KeyRole;
  createdAt: Date;
  revokedAt: Date | null;
  expiresAt: Date | null;
  /** Whether expires_at has passed, by the database's clock. */
  expired: boolean;
  lastUsedAt: Date | null;
  /** The key a rotation made in this one's place. */
  replacedBy: string | null;
}

export async function listApiKeys(dataSource: DataSource): Promise<ListedKey[]> {
  const rows = (await dataSource.query(
    `SELECT k.id, k.kind, k.name, k.prefix, k.role, t.name AS team, k.principal_uid, k.created_at, k.revoked_at,
            k.expires_at, COALESCE(k.expires_at <= now(), false) AS expired, k.last_used_at, k.replaced_by
       FROM api_keys k JOIN teams t ON t.id = k.team_id ORDER BY k.created_at`,
  )) as (Pick<ApiKey, 'id' | 'kind' | 'name' | 'prefix' | 'role'> & {
    team: string;
    principal_uid: string;
    created_at: Date;
    revoked_at: Date | null;
    expires_at: Date | null;
    expired: boolean;
    last_used_at: Date | null;
    replaced_by: string | null;
  })[];
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    name: r.name,
    prefix: r.prefix,
    team: r.team,
    principalUid: r.principal_uid,
    role: r.role,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    expiresAt: r.expires_at,
    expired: r.expired,
    lastUsedAt: r.last_used_at,
    replacedBy: r.replaced_by,
  }));
}

/**
 * The principal of an active key; for a key past its `expires_at` (by the database's clock), when
 * it expired and whose it was (the audit log records the refusal). Null for anything else (malformed, unknown or revoked): those are told apart from
 * each other by no one.
 */
export async function authenticateKey(dataSource: DataSource, rawKey: string): Promise<KeyAuthentication | null> {
  if (!looksLikeKey(rawKey)) return null;
  const rows = (await dataSource.query(
    `SELECT k.id AS key_id, k.prefix, k.role, k.expires_at, k.expires_at <= now() AS expired, k.replaced_by IS NOT NULL AS replaced,
            p.uid, p.type, p.display_name, p.team_id
       FROM api_keys k JOIN principals p ON p.uid = k.principal_uid
      WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`,
    [hashKey(rawKey)],
  )) as {
    key_id: string;
    prefix: string;
    role: KeyRole;
    expires_at: Date | null;
    expired: boolean | null;
    replaced: boolean;
    uid: string;
    type: PrincipalType;
    display_name: string;
    team_id: string;
  }[];
  const row = rows[0];
  if (!row) return null;
  const principal: AuthenticatedPrincipal = {
    uid: row.uid,
    type: row.type,
    displayName: row.display_name,
    teamId: row.team_id,
    keyId: row.key_id,
    keyPrefix: row.prefix,
    role: row.role,
    expiresAt: row.expires_at,
  };
  if (row.expired) return { ok: false, expiredAt: row.expires_at!, replaced: row.replaced, principal };
  return { ok: true, principal };
}

/** Active keys (not revoked, not replaced by a rotation) whose expires_at falls within the next `seconds`. */
export async function countKeysExpiringWithin(manager: EntityManager, seconds: number): Promise<number> {
  const [{ count }] = (await manager.query(
    `SELECT count(*)::int AS count FROM api_keys
      WHERE revoked_at IS NULL AND replaced_by IS NULL
        AND expires_at > now() AND expires_at <= now() + $1 * interval '1 second'`,
    [seconds],
  )) as [{ count: number }];
  return count;
}

/** How many keys exist in all (revoked ones too): none means a first start. */
export async function countApiKeys(dataSource: DataSource): Promise<number> {
  const [{ count }] = (await dataSource.query(`SELECT count(*)::int AS count FROM api_keys`)) as [{ count: number }];
  return count;
}
