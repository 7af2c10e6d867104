import type { EntityManager } from 'typeorm';

/** How many levels below its root run a run is (0 for a run without a parent). */
export async function runDepth(manager: EntityManager, runId: string): Promise<number> {
  const [row] = (await manager.query(
    `SELECT COALESCE(max(depth), 0)::int AS depth FROM run_lineage WHERE run_id = $1`,
    [runId],
  )) as [{ depth: number }];
  return row.depth;
}

/** Records a new run's ancestors: its parent, and every ancestor of its parent one level further up. */
export async function recordLineage(manager: EntityManager, runId: string, parentRunId: string): Promise<void> {
  await manager.query(
    `INSERT INTO run_lineage (ancestor_run_id, run_id, depth)
     SELECT $2::uuid, $1::uuid, 1
     UNION ALL
     SELECT ancestor_run_id, $1::uuid, depth + 1 FROM run_lineage WHERE run_id = $2::uuid
     ON CONFLICT DO NOTHING`,
    [runId, parentRunId],
  );
}

/** The runs below `runId` that have not ended, nearest first. */
export async function unfinishedDescendants(manager: EntityManager, runId: string): Promise<string[]> {
  const rows = (await manager.query(
    `SELECT l.run_id FROM run_lineage l JOIN runs r ON r.run_id = l.run_id
      WHERE l.ancestor_run_id = $1 AND r.state IN ('QUEUED', 'INPROGRESS')
      ORDER BY l.depth, r.created_at`,
    [runId],
  )) as { run_id: string }[];
  return rows.map((r) => r.run_id);
}
