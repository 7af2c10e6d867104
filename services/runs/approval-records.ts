import type { EntityManager } from 'typeorm';
import { observeApprovalDecided } from '../../core/metrics';
import { cancelPendingApprovals, type RunApproval } from '../../db/run-approvals';
import { appendRunEvent } from '../../db/run-events';
import { approvalEntry } from './approval-messages';

/** Records an approval's end in the transcript and in the time-to-decision metric. */
export async function recordDecision(tx: EntityManager, approval: RunApproval): Promise<void> {
  await appendRunEvent(tx, {
    runId: approval.runId,
    eventKey: `approval-${approval.approvalId}-${approval.state}`,
    kind: 'approval',
    turn: approval.turn,
    payload: approvalEntry(approval),
  });
  const decidedAt = approval.decidedAt ?? new Date();
  observeApprovalDecided(approval.state, (decidedAt.getTime() - approval.requestedAt.getTime()) / 1000);
}

/** The run's turn ended (cancelled, failed, interrupted): no call of it waits any longer. */
export async function cancelWaitingCalls(tx: EntityManager, runId: string): Promise<void> {
  for (const approval of await cancelPendingApprovals(tx, runId)) await recordDecision(tx, approval);
}
