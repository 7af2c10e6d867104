import type { EntityManager } from 'typeorm';

/**
 * QUEUED, INPROGRESS or BLOCKED runs not updated for `olderThanSeconds`, a page at a time in run id order
 * (pass the last run id of a page to get the next one).
 */
export async function findUnfinishedRuns(
  manager: EntityManager,
  olderThanSeconds: number,
  limit: number,
  afterRunId = '',
): Promise<{ runId: string; turn: number }[]> {
  const rows = (await manager.query(
    `SELECT run_id, turn FROM runs
      WHERE state IN ('QUEUED', 'INPROGRESS', 'BLOCKED') AND updated_at < clock_timestamp() - make_interval(secs => $1)
        AND run_id::text > $3
      ORDER BY run_id::text LIMIT $2`,
    [olderThanSeconds, limit, afterRunId],
  )) as { run_id: string; turn: number }[];
  return rows.map((r) => ({ runId: r.run_id, turn: r.turn }));
}
