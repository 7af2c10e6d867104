import type { EntityManager } from 'typeorm';
import { storableJson } from './storable';
import {
  APPROVAL_COLUMNS,
  toRunApproval,
  type ApprovalKind,
  type ApprovalOutcome,
  type ApprovalRow,
  type RunApproval,
} from './rows/run-approval';

export type { ApprovalKind, ApprovalOutcome, ApprovalState, RunApproval } from './rows/run-approval';

/**
 * Records that the call at (turn, step, call index) waits for a person, expiring `timeoutMinutes`
 * from now by the database's clock; a call that has a row already (a step run again) keeps it.
 * Returns the call's row either way.
 */
export async function requestApproval(
  tx: EntityManager,
  input: {
    approvalId: string;
    runId: string;
    turn: number;
    step: number;
    callIndex: number;
    kind: ApprovalKind;
    tool: string;
    arguments: Record<string, unknown>;
    question?: string;
    timeoutMinutes: number;
  },
): Promise<{ approval: RunApproval; inserted: boolean }> {
  const inserted = (await tx.query(
    `INSERT INTO run_approvals (approval_id, run_id, team_id, turn, step, call_index, kind, tool, arguments, question, expires_at)
     SELECT $1, $2, r.team_id, $3, $4, $5, $6, $7, $8::jsonb, $9, clock_timestamp() + make_interval(mins => $10)
       FROM runs r WHERE r.run_id = $2
     ON CONFLICT (run_id, turn, step, call_index) DO NOTHING RETURNING approval_id`,
    [
      input.approvalId,
      input.runId,
      input.turn,
      input.step,
      input.callIndex,
      input.kind,
      input.tool,
      storableJson(input.arguments),
      input.question ?? null,
      input.timeoutMinutes,
    ],
  )) as unknown[];
  const [row] = (await tx.query(
    `SELECT ${APPROVAL_COLUMNS} FROM run_approvals WHERE run_id = $1 AND turn = $2 AND step = $3 AND call_index = $4`,
    [input.runId, input.turn, input.step, input.callIndex],
  )) as ApprovalRow[];
  if (!row) throw new Error(`run ${input.runId} does not exist`);
  return { approval: toRunApproval(row), inserted: inserted.length > 0 };
}

/** The approvals of one step of a run, by the position of their call. */
export async function stepApprovals(
  manager: EntityManager,
  runId: string,
  turn: number,
  step: number,
): Promise<Map<number, RunApproval>> {
  const rows = (await manager.query(
    `SELECT ${APPROVAL_COLUMNS} FROM run_approvals WHERE run_id = $1 AND turn = $2 AND step = $3`,
    [runId, turn, step],
  )) as ApprovalRow[];
  return new Map(rows.map((r) => [r.call_index, toRunApproval(r)]));
}

/**
 * Ends a pending approval as `outcome`, by `decidedBy` with `comment`; a `timed_out` only once
 * its deadline has passed by the database's clock. Null, changing nothing, when it is not pending
 * (decided already) or not due. Caller holds the run's row lock.
 */
export async function decideApproval(
  tx: EntityManager,
  input: {
    runId: string;
    approvalId: string;
    outcome: ApprovalOutcome;
    decidedBy?: { uid: string; type: string; displayName: string };
    comment?: string;
  },
): Promise<RunApproval | null> {
  const [rows] = (await tx.query(
    `UPDATE run_approvals SET state = $3, decided_at = clock_timestamp(),
            decided_by_uid = $4, decided_by_type = $5, decided_by_name = $6, comment = $7
      WHERE run_id = $1 AND approval_id = $2 AND state = 'pending'
        AND ($3 <> 'timed_out' OR expires_at <= clock_timestamp())
      RETURNING ${APPROVAL_COLUMNS}`,
    [
      input.runId,
      input.approvalId,
      input.outcome,
      input.decidedBy?.uid ?? null,
      input.decidedBy?.type ?? null,
      input.decidedBy?.displayName ?? null,
      input.comment ?? null,
    ],
  )) as [ApprovalRow[], number];
  const row = rows[0];
  return row ? toRunApproval(row) : null;
}

/** Cancels the run's pending approvals (its turn ended without them); returns those it cancelled. */
export async function cancelPendingApprovals(tx: EntityManager, runId: string): Promise<RunApproval[]> {
  const [rows] = (await tx.query(
    `UPDATE run_approvals SET state = 'cancelled', decided_at = clock_timestamp()
      WHERE run_id = $1 AND state = 'pending' RETURNING ${APPROVAL_COLUMNS}`,
    [runId],
  )) as [ApprovalRow[], number];
  return rows.map(toRunApproval);
}
