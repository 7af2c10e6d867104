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
