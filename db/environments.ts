import type { EntityManager } from 'typeorm';
import { newEnvironmentUid } from '../core/ids';
import type { AuthenticatedPrincipal } from './api-key-reads';
import { type EnvironmentConfig, type Environment, rowToEnvironment } from './environment-reads';

export async function insertEnvironment(
  manager: EntityManager,
  principal: AuthenticatedPrincipal,
  config: EnvironmentConfig,
): Promise<Environment> {
  const rows = (await manager.query(
    `INSERT INTO environments (uid, team_id, config, name, creator_uid, creator_type, creator_display_name)
     VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7) RETURNING *`,
    [
      newEnvironmentUid(),
      principal.teamId,
      JSON.stringify(config),
      config.name,
      principal.uid,
      principal.type,
      principal.displayName,
    ],
  )) as Record<string, unknown>[];
  return rowToEnvironment(rows[0]!);
}

export async function updateEnvironment(
  manager: EntityManager,
  uid: string,
  teamId: string,
  config: EnvironmentConfig,
): Promise<Environment | null> {
  // Skills found in repositories the environment no longer holds go with them, in the same statement.
  const rows = (await manager.query(
    `WITH updated AS (
       UPDATE environments SET config = $3::jsonb, name = $4, setup_failed = false,
              last_updated = GREATEST(clock_timestamp(), last_updated + interval '1 millisecond')
        WHERE uid = $1 AND team_id = $2 AND deleted_at IS NULL RETURNING *
     ), dropped_skills AS (
       DELETE FROM environment_skills s USING updated u
        WHERE s.environment_uid = u.uid
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(u.config->'github_repos', '[]'::jsonb)) r
                           WHERE r->>'owner' = s.owner AND r->>'repo' = s.repo)
     )
     SELECT * FROM updated`,
    [uid, teamId, JSON.stringify(config), config.name],
  )) as Record<string, unknown>[];
  return rows[0] ? rowToEnvironment(rows[0]) : null;
}

/** Soft delete: runs keep pointing at the environment they ran in. */
export async function deleteEnvironment(manager: EntityManager, uid: string, teamId: string): Promise<boolean> {
  const rows = (await manager.query(
    `UPDATE environments SET deleted_at = clock_timestamp() WHERE uid = $1 AND team_id = $2 AND deleted_at IS NULL RETURNING uid`,
    [uid, teamId],
  )) as [unknown[], number];
  return rows[1] > 0;
}

export async function markEnvironmentSetupFailed(manager: EntityManager, uid: string, failed: boolean): Promise<void> {
  await manager.query(`UPDATE environments SET setup_failed = $2 WHERE uid = $1`, [uid, failed]);
}
