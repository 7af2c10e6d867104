import type { EntityManager } from 'typeorm';

/** Which worker holds a run's workspace, and which workspace it is. */
export interface WorkspaceHolder {
  workerId: string;
  workspaceQueue: string;
  workspaceId: string;
  /** `host:directory` the workspace is in. */
  workspaceRoot: string;
}

/** Records that `holder` holds the run's workspace now (and shows its worker on the run). */
export async function recordWorkspaceHolder(
  manager: EntityManager,
  runId: string,
  holder: WorkspaceHolder,
): Promise<void> {
  await manager.query(
    `WITH holder AS (
       INSERT INTO run_workspaces (run_id, worker_id, workspace_queue, workspace_id, workspace_root)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (run_id) DO UPDATE SET worker_id = EXCLUDED.worker_id, workspace_queue = EXCLUDED.workspace_queue,
              workspace_id = EXCLUDED.workspace_id, workspace_root = EXCLUDED.workspace_root,
              provisioned_at = clock_timestamp()
     )
     UPDATE runs SET worker_id = $2 WHERE run_id = $1 AND worker_id IS DISTINCT FROM $2`,
    [runId, holder.workerId, holder.workspaceQueue, holder.workspaceId, holder.workspaceRoot],
  );
}

export async function findWorkspaceHolder(manager: EntityManager, runId: string): Promise<WorkspaceHolder | null> {
  const [row] = (await manager.query(
    `SELECT worker_id, workspace_queue, workspace_id, workspace_root FROM run_workspaces WHERE run_id = $1`,
    [runId],
  )) as HolderRow[];
  return row ? toHolder(row) : null;
}

/** What a worker's sweep needs to know of the runs whose workspaces are on its disk. */
export interface SweptRun {
  runId: string;
  /** False when the run no longer exists. */
  exists: boolean;
  /** The run has ended and its idle window (plus `graceSeconds`) has passed: nothing will use its workspace. */
  settled: boolean;
  holder: WorkspaceHolder | null;
}

export async function runsForSweep(
  manager: EntityManager,
  runIds: string[],
  graceSeconds: number,
): Promise<SweptRun[]> {
  const rows = (await manager.query(
    `SELECT id AS run_id, r.run_id IS NOT NULL AS exists,
            COALESCE(r.state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')
              AND r.ended_at + make_interval(mins => COALESCE((r.config->>'idle_timeout_minutes')::int, 0),
                                             secs => $2) < clock_timestamp(), false) AS settled,
            w.worker_id, w.workspace_queue, w.workspace_id, w.workspace_root
       FROM unnest($1::uuid[]) AS id
       LEFT JOIN runs r ON r.run_id = id
       LEFT JOIN run_workspaces w ON w.run_id = id`,
    [runIds, graceSeconds],
  )) as ({ run_id: string; exists: boolean; settled: boolean } & (HolderRow | Record<keyof HolderRow, null>))[];
  return rows.map((r) => ({
    runId: r.run_id,
    exists: r.exists,
    settled: r.settled,
    holder: r.worker_id === null ? null : toHolder(r as HolderRow),
  }));
}

interface HolderRow {
  worker_id: string;
  workspace_queue: string;
  workspace_id: string;
  workspace_root: string;
}

function toHolder(row: HolderRow): WorkspaceHolder {
  return {
    workerId: row.worker_id,
    workspaceQueue: row.workspace_queue,
    workspaceId: row.workspace_id,
    workspaceRoot: row.workspace_root,
  };
}
