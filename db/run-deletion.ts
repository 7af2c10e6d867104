import type { EntityManager } from 'typeorm';
import type { RunState } from '../core/run-state';
import { TERMINAL_STATES } from '../core/run-state';

/**
 * The runs, with every descendant (their lineage: children, their children, ...), locked for
 * the rest of the transaction in one order (no deadlock with another deletion), each with its
 * state. Runs that do not exist are left out.
 */
export async function lockRunsWithDescendants(
  tx: EntityManager,
  runIds: string[],
): Promise<{ runId: string; teamId: string; state: RunState }[]> {
  // One set of ids, then the runs by their key: an OR of the two made PostgreSQL read every run.
  return (await tx.query(
    `SELECT run_id AS "runId", team_id AS "teamId", state FROM runs
      WHERE run_id IN (
        SELECT unnest($1::uuid[]) UNION SELECT run_id FROM run_lineage WHERE ancestor_run_id = ANY($1::uuid[]))
      ORDER BY run_id
      FOR UPDATE`,
    [runIds],
  )) as { runId: string; teamId: string; state: RunState }[];
}

/**
 * Deletes the runs' rows: their transcripts (and the webhook events made of them), follow-ups,
 * and the runs, with everything that cascades from them (artifacts, attachments, handoff files
 * and their blobs, checkpoints, lineage, workspaces' records, CLI state, references). The objects
 * those rows named are left to the collector, which removes what no row names any more.
 */
export async function deleteRunRows(tx: EntityManager, runIds: string[]): Promise<number> {
  await tx.query(`DELETE FROM run_events WHERE run_id = ANY($1::uuid[])`, [runIds]);
  await tx.query(`DELETE FROM followups WHERE run_id = ANY($1::uuid[])`, [runIds]);
  const [, deleted] = (await tx.query(`DELETE FROM runs WHERE run_id = ANY($1::uuid[])`, [runIds])) as [
    unknown,
    number,
  ];
  return deleted;
}

/**
 * Up to `limit` ended runs of any team that ended before `endedBefore` and have no descendant
 * still live: what retention deletes next, oldest first.
 */
export async function expiredRunIds(tx: EntityManager, endedBefore: Date, limit: number): Promise<string[]> {
  const rows = (await tx.query(
    `SELECT r.run_id FROM runs r
      WHERE r.ended_at < $1 AND r.state = ANY($3::text[])
        AND NOT EXISTS (
          SELECT 1 FROM run_lineage l JOIN runs d ON d.run_id = l.run_id
           WHERE l.ancestor_run_id = r.run_id AND (d.state <> ALL($3::text[]) OR d.ended_at >= $1))
      ORDER BY r.ended_at
      LIMIT $2`,
    [endedBefore, limit, TERMINAL_STATES],
  )) as { run_id: string }[];
  return rows.map((r) => r.run_id);
}
