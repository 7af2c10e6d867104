import type { EntityManager } from 'typeorm';

/** Tables of a team's resources whose number per team is capped. */
export type CappedTable = 'environments' | 'schedules' | 'agent_identities' | 'webhooks' | 'managed_secrets';

/**
 * How many rows the team has in `table`, counted under a lock of the team's for that table, so
 * that two creates at once cannot both pass a cap. Call it in the transaction that inserts.
 */
export async function countTeamRowsForInsert(
  manager: EntityManager,
  table: CappedTable,
  teamId: string,
): Promise<number> {
  await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2, 0))`, [table, teamId]);
  const [{ count }] = (await manager.query(`SELECT count(*)::int AS count FROM ${table} WHERE team_id = $1`, [
    teamId,
  ])) as [{ count: number }];
  return count;
}
