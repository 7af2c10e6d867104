import { WorkflowNotFoundError } from '@temporalio/client';
import type { EntityManager } from 'typeorm';
import { ApiError, invalid, notFound } from '../../core/api-error';
import { isUuid } from '../../core/ids';
import type { ApprovalDecisionRequest } from '../../core/schemas/approval-schemas';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import type { Run } from '../../db/rows/run';
import { findRunApproval, pendingApprovalsOf } from '../../db/run-approval-reads';
import { decideApproval, type ApprovalOutcome, type RunApproval } from '../../db/run-approvals';
import { approvalSignal, runWorkflowId } from '../../workflows/run-contract';
import { recordDecision } from './approval-records';
import type { RunServiceDeps, RunWrites } from './run-writes';

/** Who decided, as an approval records it. */
const decider = (principal: AuthenticatedPrincipal) => ({
  uid: principal.uid,
  type: principal.type,
  displayName: principal.displayName,
});

/** An agent key of the run itself (the agent that created it or works it). */
function isRunsOwnAgent(principal: AuthenticatedPrincipal, run: Pick<Run, 'creatorUid' | 'executorUid'>): boolean {
  return (
    principal.type === 'service_account' && (run.creatorUid === principal.uid || run.executorUid === principal.uid)
  );
}

/** Decides a pending approval (caller holds the run's row lock) and records it in the transcript; null when not pending. */
async function settle(
  tx: EntityManager,
  approval: RunApproval,
  outcome: ApprovalOutcome,
  principal: AuthenticatedPrincipal,
  comment: string | undefined,
): Promise<RunApproval | null> {
  const decided = await decideApproval(tx, {
    runId: approval.runId,
    approvalId: approval.approvalId,
    outcome,
    decidedBy: decider(principal),
    ...(comment !== undefined ? { comment } : {}),
  });
  if (decided) await recordDecision(tx, decided);
  return decided;
}

/**
 * Decisions on a blocked run's waiting calls, through `POST /agent/runs/{id}/approvals/{id}` or a
 * follow-up; each is recorded (with who, when and why) under the run's row lock, then the run's
 * workflow is told (should that fail, it looks on its own within the hour).
 */
export function createApprovalDecisions(
  { config, dataSource, temporal, logger }: RunServiceDeps,
  writes: Pick<RunWrites, 'withinDeadline' | 'lockTeamRun'>,
) {
  const { withinDeadline, lockTeamRun } = writes;

  /** 403 unless the key may decide this run's calls: admins; members when allowed; never the run's own agent. */
  function assertMayDecide(principal: AuthenticatedPrincipal, run: Run): void {
    if (isRunsOwnAgent(principal, run)) {
      throw new ApiError(
        'not_authorized',
        `This is an agent key of the agent that ${run.executorUid === principal.uid ? 'works' : 'created'} run ${run.runId}: an agent never decides its own run's calls. A person of the team decides them.`,
      );
    }
    if (principal.role === 'admin' || config.approvalsMembersMayDecide) return;
    throw new ApiError(
      'not_authorized',
      "Only an admin key of your team may decide a run's waiting calls; this key is a member key. An operator lets member keys decide too with APPROVALS_MEMBERS_MAY_DECIDE=true.",
    );
  }

  /** Tells the run's workflow to look at its approval; a failure only delays it to the workflow's own look. */
  async function signalDecision(runId: string): Promise<void> {
    try {
      await withinDeadline(() => temporal.workflow.getHandle(runWorkflowId(runId)).signal(approvalSignal));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return;
      logger.warn('could not signal a decision to its run; the run finds it at its next hourly look', {
        run_id: runId,
        error: err,
      });
    }
  }

  return {
    signalDecision,

    /** `POST /agent/runs/{runId}/approvals/{approvalId}`: 409 when the approval is no longer pending. */
    async decideApproval(
      principal: AuthenticatedPrincipal,
      runId: string,
      approvalId: string,
      body: ApprovalDecisionRequest,
    ): Promise<void> {
      if (!isUuid(approvalId)) throw notFound(`Run ${runId} has no approval ${approvalId}.`);
      await dataSource.transaction(async (tx) => {
        const { run } = await lockTeamRun(tx, principal, runId);
        const approval = await findRunApproval(tx, runId, approvalId);
        if (!approval) throw notFound(`Run ${runId} has no approval ${approvalId}.`);
        assertMayDecide(principal, run);
        if (approval.kind === 'question' && body.decision === 'approve' && !body.comment?.trim()) {
          throw invalid('To approve a question, give the answer as `comment` (or answer it with a follow-up).');
        }
        const outcome = body.decision === 'approve' ? 'approved' : 'denied';
        if (approval.state !== 'pending' || !(await settle(tx, approval, outcome, principal, body.comment))) {
          throw new ApiError('conflict', notPending(approval), { retryable: false });
        }
      });
      await signalDecision(runId);
    },

    /**
     * A follow-up to a BLOCKED run (row locked): its message answers the waiting question, or
     * denies the waiting call as its comment. False when no call waits (the follow-up queues).
     */
    async settleWithFollowup(
      tx: EntityManager,
      principal: AuthenticatedPrincipal,
      run: Run,
      message: string,
    ): Promise<boolean> {
      const approval = (await pendingApprovalsOf(tx, [run.runId])).get(run.runId);
      if (!approval) return false;
      // Answering is deciding: the run's own agent may not; any key may deny, the safe way.
      if (approval.kind === 'question' && isRunsOwnAgent(principal, run)) assertMayDecide(principal, run);
      const outcome = approval.kind === 'question' ? 'approved' : 'denied';
      return (await settle(tx, approval, outcome, principal, message)) !== null;
    },
  };
}

function notPending(approval: RunApproval): string {
  const by = approval.decidedBy ? ` by ${approval.decidedBy.displayName} (${approval.decidedBy.uid})` : '';
  const at = approval.decidedAt ? ` at ${approval.decidedAt.toISOString()}` : '';
  return `Approval ${approval.approvalId} is no longer pending: it was ${approval.state.replace('_', ' ')}${by}${at}.`;
}
