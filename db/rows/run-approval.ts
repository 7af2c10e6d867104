/** A row of `run_approvals`: one call of an agent that waited (or waits) for a person. */

export type ApprovalKind = 'tool_call' | 'question';
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'timed_out' | 'cancelled';
/** How a pending approval ends. */
export type ApprovalOutcome = Exclude<ApprovalState, 'pending'>;

/** One call of an agent that waited (or waits) for a person. */
export interface RunApproval {
  approvalId: string;
  runId: string;
  teamId: string;
  turn: number;
  step: number;
  callIndex: number;
  kind: ApprovalKind;
  tool: string;
  arguments: Record<string, unknown>;
  question: string | null;
  requestedAt: Date;
  expiresAt: Date;
  state: ApprovalState;
  decidedBy: { uid: string; type: string; displayName: string } | null;
  decidedAt: Date | null;
  /** The decider's comment; for a question, the answer. */
  comment: string | null;
}

export interface ApprovalRow {
  approval_id: string;
  run_id: string;
  team_id: string;
  turn: number;
  step: number;
  call_index: number;
  kind: ApprovalKind;
  tool: string;
  arguments: Record<string, unknown>;
  question: string | null;
  requested_at: Date;
  expires_at: Date;
  state: ApprovalState;
  decided_by_uid: string | null;
  decided_by_type: string | null;
  decided_by_name: string | null;
  decided_at: Date | null;
  comment: string | null;
}

export const APPROVAL_COLUMNS = `approval_id, run_id, team_id, turn, step, call_index, kind, tool, arguments, question,
  requested_at, expires_at, state, decided_by_uid, decided_by_type, decided_by_name, decided_at, comment`;

export function toRunApproval(r: ApprovalRow): RunApproval {
  return {
    approvalId: r.approval_id,
    runId: r.run_id,
    teamId: r.team_id,
    turn: r.turn,
    step: r.step,
    callIndex: r.call_index,
    kind: r.kind,
    tool: r.tool,
    arguments: r.arguments,
    question: r.question,
    requestedAt: r.requested_at,
    expiresAt: r.expires_at,
    state: r.state,
    decidedBy: r.decided_by_uid
      ? { uid: r.decided_by_uid, type: r.decided_by_type ?? 'user', displayName: r.decided_by_name ?? r.decided_by_uid }
      : null,
    decidedAt: r.decided_at,
    comment: r.comment,
  };
}
