import type { EntityManager } from 'typeorm';
import { FACTORY_COLUMNS as COLUMNS, newFactoryUid, toFactory, type Factory } from './rows/factory';

export {
  fileAgentIdentityName,
  syncFileFactories,
  type FileFactorySyncResult,
  type FoundFactoryFile,
  type SkippedFactoryFile,
} from './file-factories';

/** What a factory made through the API sets. */
export interface FactoryFields {
  name: string;
  description: string | null;
  environmentId: string | null;
}

export async function createFactory(manager: EntityManager, teamId: string, fields: FactoryFields): Promise<Factory> {
  const rows = (await manager.query(
    `INSERT INTO factories (uid, team_id, name, description, environment_id)
     VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [newFactoryUid(), teamId, fields.name, fields.description, fields.environmentId],
  )) as Record<string, unknown>[];
  return toFactory(rows[0]!);
}

/** Replaces what an API factory sets; null when the team has no such API factory. */
export async function updateFactory(
  manager: EntityManager,
  uid: string,
  teamId: string,
  fields: FactoryFields,
): Promise<Factory | null> {
  const rows = (await manager.query(
    `UPDATE factories SET name = $3, description = $4, environment_id = $5, updated_at = clock_timestamp()
      WHERE uid = $1 AND team_id = $2 AND file_key IS NULL RETURNING ${COLUMNS}`,
    [uid, teamId, fields.name, fields.description, fields.environmentId],
  )) as [Record<string, unknown>[], number];
  return rows[0][0] ? toFactory(rows[0][0]) : null;
}

/** Deletes an API factory; its agents stay, detached (`factory_uid` null). False when there is none. */
export async function deleteFactory(manager: EntityManager, uid: string, teamId: string): Promise<boolean> {
  const deleted = (await manager.query(
    `DELETE FROM factories WHERE uid = $1 AND team_id = $2 AND file_key IS NULL RETURNING uid`,
    [uid, teamId],
  )) as [unknown[], number];
  if (deleted[1] === 0) return false;
  await manager.query(
    `UPDATE agent_identities SET factory_uid = NULL, updated_at = clock_timestamp() WHERE team_id = $1 AND factory_uid = $2`,
    [teamId, uid],
  );
  return true;
}

/** Locks the factory's row for the transaction (membership changes serialise on it); null when absent. */
export async function lockFactory(manager: EntityManager, uid: string, teamId: string): Promise<Factory | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM factories WHERE uid = $1 AND team_id = $2 FOR UPDATE`, [
    uid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toFactory(rows[0]) : null;
}
