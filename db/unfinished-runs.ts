import type { EntityManager } from 'typeorm';

/** QUEUED or INPROGRESS runs not updated for `olderThanSeconds`, oldest first. */
export async function findUnfinishedRuns(
  manager: EntityManager,
  olderThanSeconds: number,
  limit: number,
): Promise<{ runId: string; turn: number }[]> {
  const rows = (await manager.query(
    `SELECT run_id, turn FROM runs
      WHERE state IN ('QUEUED', 'INPROGRESS') AND updated_at < clock_timestamp() - make_interval(secs => $1)
      ORDER BY updated_at LIMIT $2`,
    [olderThanSeconds, limit],
  )) as { run_id: string; turn: number }[];
  return rows.map((r) => ({ runId: r.run_id, turn: r.turn }));
}
