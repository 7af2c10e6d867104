import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Logger } from '../../core/logger';
import { findRunApproval } from '../../db/run-approval-reads';
import { decideApproval, requestApproval, type ApprovalKind, type RunApproval } from '../../db/run-approvals';
import { appendRunEvent } from '../../db/run-events';
import { blockRun, lockRun } from '../../db/run-store';
import { approvalEntry, blockedStatus } from './approval-messages';
import { recordDecision } from './approval-records';
import { logStateChange } from './run-transitions';

/** A call that waits, as the step asks for a decision on it. */
export interface WaitingCall {
  runId: string;
  turn: number;
  step: number;
  callIndex: number;
  kind: ApprovalKind;
  tool: string;
  arguments: Record<string, unknown>;
  question?: string;
  timeoutMinutes: number;
  /** The glob of `config.approval` the call matched (a question matches none). */
  glob?: string;
}

/**
 * The side of approvals the run's own activities take: a call starts waiting (the run BLOCKED,
 * in the transaction that records it), and a waiting call's deadline is enforced.
 */
export function createApprovalRequests({ dataSource, logger }: { dataSource: DataSource; logger: Logger }) {
  return {
    /**
     * The call waits for a person: its approval is recorded (once; a step run again finds the
     * same one) and the run moves INPROGRESS → BLOCKED, giving up its team slot, in one
     * transaction. Returns the approval as recorded.
     */
    async waitFor(call: WaitingCall): Promise<RunApproval> {
      let blocked = false;
      const approval = await dataSource.transaction(async (tx) => {
        await lockRun(tx, call.runId);
        const { approval } = await requestApproval(tx, {
          approvalId: randomUUID(),
          runId: call.runId,
          turn: call.turn,
          step: call.step,
          callIndex: call.callIndex,
          kind: call.kind,
          tool: call.tool,
          arguments: call.arguments,
          ...(call.question !== undefined ? { question: call.question } : {}),
          timeoutMinutes: call.timeoutMinutes,
        });
        if (approval.state !== 'pending') return approval;
        blocked = await blockRun(tx, {
          runId: call.runId,
          turn: call.turn,
          approvalId: approval.approvalId,
          statusMessage: blockedStatus(approval, call.glob),
        });
        await appendRunEvent(tx, {
          runId: call.runId,
          eventKey: `approval-${approval.approvalId}-pending`,
          kind: 'approval',
          turn: call.turn,
          payload: approvalEntry(approval),
        });
        return approval;
      });
      if (blocked) logStateChange(logger, { runId: call.runId, turn: call.turn, state: 'BLOCKED' });
      return approval;
    },

    /**
     * Whether the approval still waits; one whose deadline has passed (by the database's clock)
     * is ended `timed_out` here, if nobody decided it meanwhile.
     */
    async stillPending({ runId, approvalId }: { runId: string; approvalId: string }): Promise<boolean> {
      return dataSource.transaction(async (tx) => {
        await lockRun(tx, runId);
        const expired = await decideApproval(tx, { runId, approvalId, outcome: 'timed_out' });
        if (expired) {
          await recordDecision(tx, expired);
          return false;
        }
        return (await findRunApproval(tx, runId, approvalId))?.state === 'pending';
      });
    },
  };
}
