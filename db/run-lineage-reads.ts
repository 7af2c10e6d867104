import type { EntityManager } from 'typeorm';
import type { RunState } from '../core/run-state';

/** How many levels below its root run a run is (0 for a run without a parent). */
export async function runDepth(manager: EntityManager, runId: string): Promise<number> {
  const [row] = (await manager.query(
    `SELECT COALESCE(max(depth), 0)::int AS depth FROM run_lineage WHERE run_id = $1`,
    [runId],
  )) as [{ depth: number }];
  return row.depth;
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

/** The run a parent dispatched at this position, if any. */
export async function findDispatchedChild(
  manager: EntityManager,
  parentRunId: string,
  dispatchKey: string,
): Promise<string | null> {
  const rows = (await manager.query(`SELECT run_id FROM runs WHERE parent_run_id = $1 AND dispatch_key = $2`, [
    parentRunId,
    dispatchKey,
  ])) as { run_id: string }[];
  return rows[0]?.run_id ?? null;
}

export async function countChildren(manager: EntityManager, parentRunId: string): Promise<number> {
  const [row] = (await manager.query(`SELECT count(*)::int AS n FROM runs WHERE parent_run_id = $1`, [
    parentRunId,
  ])) as [{ n: number }];
  return row.n;
}

/** Where a child run stands, as its parent's agent is told. */
export interface ChildRunStatus {
  runId: string;
  agent: string | null;
  title: string;
  state: RunState;
  message: string | null;
  sessionId: string;
}

/** The parent's children (all, or those named), oldest first. */
export async function childRunStatuses(
  manager: EntityManager,
  parentRunId: string,
  runIds?: string[],
): Promise<ChildRunStatus[]> {
  const rows = (await manager.query(
    `SELECT run_id, executor_display_name, title, state, status_message->>'message' AS message, session_id
       FROM runs WHERE parent_run_id = $1 AND ($2::uuid[] IS NULL OR run_id = ANY($2::uuid[]))
      ORDER BY created_at, run_id`,
    [parentRunId, runIds ?? null],
  )) as Record<string, unknown>[];
  return rows.map((r) => ({
    runId: r.run_id as string,
    agent: (r.executor_display_name as string | null) ?? null,
    title: r.title as string,
    state: r.state as RunState,
    message: (r.message as string | null) ?? null,
    sessionId: r.session_id as string,
  }));
}
