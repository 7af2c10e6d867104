import type { EntityManager } from 'typeorm';
import type { RunState } from '../core/run-state';

/** A run as `npm run restore -- check` compares it with its workflow, with its ages by the database's clock. */
export interface RunForCheck {
  runId: string;
  state: RunState;
  turn: number;
  updatedSecondsAgo: number;
  endedSecondsAgo: number | null;
  idleTimeoutMinutes: number;
}

const COLUMNS = `run_id, state, turn, COALESCE((config->>'idle_timeout_minutes')::int, 0) AS idle,
       EXTRACT(EPOCH FROM clock_timestamp() - updated_at)::float8 AS updated_ago,
       EXTRACT(EPOCH FROM clock_timestamp() - ended_at)::float8 AS ended_ago`;

interface Row {
  run_id: string;
  state: RunState;
  turn: number;
  idle: number;
  updated_ago: number;
  ended_ago: number | null;
}

const toRun = (r: Row): RunForCheck => ({
  runId: r.run_id,
  state: r.state,
  turn: r.turn,
  updatedSecondsAgo: r.updated_ago,
  endedSecondsAgo: r.ended_ago,
  idleTimeoutMinutes: r.idle,
});

/** QUEUED and INPROGRESS runs, a page at a time in run id order (pass the last run id of a page for the next). */
export async function unfinishedRunsForCheck(
  manager: EntityManager,
  limit: number,
  afterRunId = '',
): Promise<RunForCheck[]> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM runs
      WHERE state IN ('QUEUED', 'INPROGRESS') AND run_id::text > $2
      ORDER BY run_id::text LIMIT $1`,
    [limit, afterRunId],
  )) as Row[];
  return rows.map(toRun);
}

/** Those of `runIds` that have a row. */
export async function runsForCheck(manager: EntityManager, runIds: string[]): Promise<RunForCheck[]> {
  if (runIds.length === 0) return [];
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM runs WHERE run_id = ANY($1::uuid[])`, [runIds])) as Row[];
  return rows.map(toRun);
}
