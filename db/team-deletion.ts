import type { EntityManager } from 'typeorm';
import { TERMINAL_STATES, type RunState } from '../core/run-state';
import { TEAM_TABLES, type TeamTable } from './team-data-tables';

export interface TeamRef {
  id: string;
  name: string;
}

/** The team of that id (a UUID) or name; null when there is none. */
export async function findTeam(manager: EntityManager, idOrName: string, isId: boolean): Promise<TeamRef | null> {
  const rows = (await manager.query(`SELECT id, name FROM teams WHERE ${isId ? 'id = $1::uuid' : 'name = $1'}`, [
    idOrName,
  ])) as TeamRef[];
  return rows[0] ?? null;
}

/** How many rows of the team each table of TEAM_TABLES holds. */
export async function countTeamRows(manager: EntityManager, teamId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { table, rows } of TEAM_TABLES) {
    const [row] = (await manager.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${rows}`, [teamId])) as {
      n: number;
    }[];
    counts[table] = row!.n;
  }
  return counts;
}

/** The team's live runs (not ended), oldest first: up to `limit` of them, and how many there are. */
export async function liveTeamRuns(
  manager: EntityManager,
  teamId: string,
  limit: number,
): Promise<{ runs: { runId: string; state: RunState }[]; total: number }> {
  const rows = (await manager.query(
    `SELECT run_id AS "runId", state, count(*) OVER ()::int AS total FROM runs
      WHERE team_id = $1 AND state <> ALL($2::text[])
      ORDER BY created_at, run_id LIMIT $3`,
    [teamId, TERMINAL_STATES, limit],
  )) as { runId: string; state: RunState; total: number }[];
  return { runs: rows.map(({ runId, state }) => ({ runId, state })), total: rows[0]?.total ?? 0 };
}

/** Up to `limit` of the team's ended runs: what the team deletion deletes next (each with its descendants). */
export async function endedTeamRunIds(manager: EntityManager, teamId: string, limit: number): Promise<string[]> {
  const rows = (await manager.query(
    `SELECT run_id FROM runs WHERE team_id = $1 AND state = ANY($2::text[]) ORDER BY run_id LIMIT $3`,
    [teamId, TERMINAL_STATES, limit],
  )) as { run_id: string }[];
  return rows.map((r) => r.run_id);
}

/** Revokes the team's active API keys: nothing new comes in while the team is deleted. The number revoked. */
export async function revokeTeamKeys(manager: EntityManager, teamId: string): Promise<number> {
  const [, revoked] = (await manager.query(
    `UPDATE api_keys SET revoked_at = clock_timestamp() WHERE team_id = $1 AND revoked_at IS NULL`,
    [teamId],
  )) as [unknown, number];
  return revoked;
}

/** Up to `limit` of the team's schedules' ids. */
export async function teamScheduleIds(manager: EntityManager, teamId: string, limit: number): Promise<string[]> {
  const rows = (await manager.query(`SELECT schedule_id FROM schedules WHERE team_id = $1 LIMIT $2`, [
    teamId,
    limit,
  ])) as { schedule_id: string }[];
  return rows.map((r) => r.schedule_id);
}

export async function deleteSchedulesById(manager: EntityManager, scheduleIds: string[]): Promise<void> {
  await manager.query(`DELETE FROM schedules WHERE schedule_id = ANY($1::uuid[])`, [scheduleIds]);
}

/**
 * Deletes up to `limit` of the team's rows of one table (a statement of its own: a short
 * transaction); the number deleted. 0 once none is left that can go.
 */
export async function deleteTeamRowsBatch(
  manager: EntityManager,
  { table, rows, deletableNow }: TeamTable,
  teamId: string,
  limit: number,
): Promise<number> {
  const where = deletableNow ? `(${rows}) AND ${deletableNow}` : rows;
  const [, deleted] = (await manager.query(
    `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${where} LIMIT $2))`,
    [teamId, limit],
  )) as [unknown, number];
  return deleted;
}
