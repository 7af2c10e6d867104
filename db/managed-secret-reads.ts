import type { EntityManager } from 'typeorm';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

/** A team's named credential; its value only ever leaves the database encrypted. */
export interface ManagedSecret {
  id: string;
  teamId: string;
  name: string;
  kind: string;
  description: string | null;
  /** enc:v2:<key id>:… (or enc:v1:… from before key ids) under the secrets keyring (core/secrets.ts). */
  encryptedValue: string;
  createdAt: Date;
  updatedAt: Date;
}

export const COLUMNS = `id, team_id, name, kind, description, encrypted_value, created_at, updated_at`;

export function toSecret(row: Record<string, unknown>): ManagedSecret {
  return {
    id: row.id as string,
    teamId: row.team_id as string,
    name: row.name as string,
    kind: row.kind as string,
    description: (row.description as string | null) ?? null,
    encryptedValue: row.encrypted_value as string,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** Whether the team has a secret of this name (for counting it against the cap: a replace adds none). */
export async function hasManagedSecret(manager: EntityManager, teamId: string, name: string): Promise<boolean> {
  const rows = (await manager.query(`SELECT 1 FROM managed_secrets WHERE team_id = $1 AND name = $2`, [
    teamId,
    name,
  ])) as unknown[];
  return rows.length > 0;
}

export async function findManagedSecret(
  manager: EntityManager,
  teamId: string,
  name: string,
): Promise<ManagedSecret | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM managed_secrets WHERE team_id = $1 AND name = $2`, [
    teamId,
    name,
  ])) as Record<string, unknown>[];
  return rows[0] ? toSecret(rows[0]) : null;
}

/** A team's secrets of one kind (its registry credentials, to find the one for an image's registry). */
export async function listManagedSecretsOfKind(
  manager: EntityManager,
  teamId: string,
  kind: string,
): Promise<ManagedSecret[]> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM managed_secrets WHERE team_id = $1 AND kind = $2 ORDER BY name`,
    [teamId, kind],
  )) as Record<string, unknown>[];
  return rows.map(toSecret);
}

/** A team's secrets by name. */
export const MANAGED_SECRET_ORDER: KeysetOrder = {
  column: 'name',
  type: 'text',
  key: 'id',
  keyType: 'uuid',
  direction: 'ASC',
};

export async function listManagedSecrets(
  manager: EntityManager,
  teamId: string,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<ManagedSecret>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    { columns: COLUMNS, from: 'managed_secrets', where: 'team_id = $1', params: [teamId] },
    MANAGED_SECRET_ORDER,
    page.limit,
    page.after,
  );
  return { rows: rows.map(toSecret), ...(next ? { next } : {}) };
}
