import type { EntityManager } from 'typeorm';
import { type ManagedSecret, COLUMNS, toSecret } from './managed-secret-reads';

/**
 * Stores a secret by name, replacing the value, kind and description of one the team already
 * has; says whether it was new. The caller checks the team's cap in the same transaction.
 */
export async function upsertManagedSecret(
  manager: EntityManager,
  secret: Pick<ManagedSecret, 'id' | 'teamId' | 'name' | 'kind' | 'description' | 'encryptedValue'>,
): Promise<{ secret: ManagedSecret; created: boolean }> {
  const [row] = (await manager.query(
    `INSERT INTO managed_secrets (id, team_id, name, kind, description, encrypted_value)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (team_id, name) DO UPDATE
       SET kind = EXCLUDED.kind, description = EXCLUDED.description,
           encrypted_value = EXCLUDED.encrypted_value, updated_at = clock_timestamp()
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [secret.id, secret.teamId, secret.name, secret.kind, secret.description, secret.encryptedValue],
  )) as Record<string, unknown>[];
  return { secret: toSecret(row!), created: row!.created === true };
}

/** Deletes a secret of the team; false when it has none by that name. */
export async function deleteManagedSecret(manager: EntityManager, teamId: string, name: string): Promise<boolean> {
  const [, count] = (await manager.query(`DELETE FROM managed_secrets WHERE team_id = $1 AND name = $2`, [
    teamId,
    name,
  ])) as [unknown, number];
  return count > 0;
}
