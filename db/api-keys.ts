import { createHash, randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import type { ApiKey, ApiKeyKind, KeyRole } from './rows/api-key';
import type { PrincipalType } from './rows/principal';

const KEY_PREFIX = 'ark';

export interface AuthenticatedPrincipal {
  uid: string;
  type: PrincipalType;
  displayName: string;
  teamId: string;
  keyId: string;
  role: KeyRole;
}

export interface CreatedKey {
  id: string;
  rawKey: string;
  prefix: string;
  principalUid: string;
  teamId: string;
  role: KeyRole;
}

export function hashKey(rawKey: string): string {
  return createHash('sha256').update(rawKey).digest('hex');
}

/** Keys look like `ark_<8-char public prefix>_<secret>`; the prefix alone is safe to log. */
export function generateRawKey(): { rawKey: string; prefix: string } {
  const prefix = randomBytes(6).toString('base64url');
  const secret = randomBytes(32).toString('base64url');
  return { rawKey: `${KEY_PREFIX}_${prefix}_${secret}`, prefix: `${KEY_PREFIX}_${prefix}` };
}

export function looksLikeKey(value: string): boolean {
  return /^ark_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{43}$/.test(value);
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

/** Inserts a new key of `holder`; the raw key is in the answer only. */
export async function insertApiKey(
  tx: EntityManager,
  holder: KeyHolder,
  kind: ApiKeyKind,
  role: KeyRole,
): Promise<CreatedKey> {
  const { rawKey, prefix } = generateRawKey();
  const id = newUuidV7();
  await tx.query(
    `INSERT INTO api_keys (id, principal_uid, team_id, kind, name, prefix, secret_hash, role)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, holder.uid, holder.teamId, kind, holder.name, prefix, hashKey(rawKey), role],
  );
  return { id, rawKey, prefix, principalUid: holder.uid, teamId: holder.teamId, role };
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
}

export async function listApiKeys(dataSource: DataSource): Promise<ListedKey[]> {
  const rows = (await dataSource.query(
    `SELECT k.id, k.kind, k.name, k.prefix, k.role, t.name AS team, k.principal_uid, k.created_at, k.revoked_at
       FROM api_keys k JOIN teams t ON t.id = k.team_id ORDER BY k.created_at`,
  )) as (Omit<ApiKey, 'principalUid' | 'createdAt' | 'revokedAt'> & {
    team: string;
    principal_uid: string;
    created_at: Date;
    revoked_at: Date | null;
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
  }));
}

/** Gives an active key (by id or public prefix) a role; returns false when no active key matched. */
export async function setApiKeyRole(dataSource: DataSource, idOrPrefix: string, role: KeyRole): Promise<boolean> {
  const column = /^[0-9a-f-]{36}$/.test(idOrPrefix) ? 'id::text' : 'prefix';
  const result = (await dataSource.query(
    `UPDATE api_keys SET role = $2 WHERE ${column} = $1 AND revoked_at IS NULL RETURNING id`,
    [idOrPrefix, role],
  )) as [unknown[], number];
  return result[1] > 0;
}

/** Revokes by key id or public prefix; returns false when no active key matched. */
export async function revokeApiKey(dataSource: DataSource, idOrPrefix: string): Promise<boolean> {
  const column = /^[0-9a-f-]{36}$/.test(idOrPrefix) ? 'id::text' : 'prefix';
  const result = (await dataSource.query(
    `UPDATE api_keys SET revoked_at = now() WHERE ${column} = $1 AND revoked_at IS NULL RETURNING id`,
    [idOrPrefix],
  )) as [unknown[], number];
  return result[1] > 0;
}

export async function authenticateKey(dataSource: DataSource, rawKey: string): Promise<AuthenticatedPrincipal | null> {
  if (!looksLikeKey(rawKey)) return null;
  const rows = (await dataSource.query(
    `SELECT k.id AS key_id, k.role, p.uid, p.type, p.display_name, p.team_id
       FROM api_keys k JOIN principals p ON p.uid = k.principal_uid
      WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`,
    [hashKey(rawKey)],
  )) as { key_id: string; role: KeyRole; uid: string; type: PrincipalType; display_name: string; team_id: string }[];
  const row = rows[0];
  if (!row) return null;
  return {
    uid: row.uid,
    type: row.type,
    displayName: row.display_name,
    teamId: row.team_id,
    keyId: row.key_id,
    role: row.role,
  };
}

/** How many keys exist in all (revoked ones too): none means a first start. */
export async function countApiKeys(dataSource: DataSource): Promise<number> {
  const [{ count }] = (await dataSource.query(`SELECT count(*)::int AS count FROM api_keys`)) as [{ count: number }];
  return count;
}
