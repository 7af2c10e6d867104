import type { EntityManager } from 'typeorm';
import { APPROVAL_COLUMNS, toRunApproval, type ApprovalRow as Row, type RunApproval } from './rows/run-approval';

/** The approval `approvalId` of the run, if it has one by that id. */
export async function findRunApproval(
  manager: EntityManager,
  runId: string,
  approvalId: string,
): Promise<RunApproval | null> {
  const [row] = (await manager.query(
    `SELECT ${APPROVAL_COLUMNS} FROM run_approvals WHERE run_id = $1 AND approval_id = $2`,
    [runId, approvalId],
  )) as Row[];
  return row ? toRunApproval(row) : null;
}

/** The pending approval of each of these runs that has one (the oldest, should a run have several). */
export async function pendingApprovalsOf(manager: EntityManager, runIds: string[]): Promise<Map<string, RunApproval>> {
  if (!runIds.length) return new Map();
  const rows = (await manager.query(
    `SELECT DISTINCT ON (run_id) ${APPROVAL_COLUMNS} FROM run_approvals
      WHERE run_id = ANY($1::uuid[]) AND state = 'pending'
      ORDER BY run_id, requested_at, call_index`,
    [runIds],
  )) as Row[];
  return new Map(rows.map((r) => [r.run_id, toRunApproval(r)]));
}

/** The approval of the run's turn decided most recently (what its unblocking is recorded against). */
export async function lastDecidedApproval(
  manager: EntityManager,
  runId: string,
  turn: number,
): Promise<RunApproval | null> {
  const [row] = (await manager.query(
    `SELECT ${APPROVAL_COLUMNS} FROM run_approvals WHERE run_id = $1 AND turn = $2 AND state <> 'pending'
      ORDER BY decided_at DESC NULLS LAST, requested_at DESC LIMIT 1`,
    [runId, turn],
  )) as Row[];
  return row ? toRunApproval(row) : null;
}
