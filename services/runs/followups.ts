import { ApiError, notFound } from '../../core/api-error';
import { isUuid } from '../../core/ids';
import { isTerminal, type RunState } from '../../core/run-state';
import type { FollowupRequest } from '../../core/schemas/run-schemas';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { recordFollowup, withdrawFollowup, type RecordedFollowup } from '../../db/followups';
import { deleteIdempotencyRecord } from '../../db/idempotency-records';
import { followupSignal, RUN_WORKFLOW_TYPE, type AgentRunWorkflow } from '../../workflows/run-contract';
import type { StoredResponse } from './idempotency';
import { ORCHESTRATE_MODE_WHY } from './run-request-fields';
import type { RunServiceDeps, RunWrites } from './run-writes';
import { runWorkflowOptions } from './run-workflow-options';
import type { createApprovalDecisions } from './approval-decisions';

/** How a follow-up reaches the run, in the newest official client's words (`outcome`). */
export type FollowupOutcome = 'live_session' | 'queued_prompt' | 'handoff_execution' | 'queue_pending';

/**
 * The outcome of a follow-up to a run found in `locked` state: joined to the prompt of a run not
 * started yet, handed to a working agent at its next step, continuing an ended run in a new turn
 * (the same run), or waiting with a reopened run for its turn to start.
 */
export function followupOutcome(locked: { state: RunState; turn: number }): FollowupOutcome {
  if (isTerminal(locked.state)) return 'handoff_execution';
  if (locked.state === 'INPROGRESS' || locked.state === 'BLOCKED') return 'live_session';
  return locked.turn === 1 ? 'queued_prompt' : 'queue_pending';
}

/** `POST /agent/runs/{id}/followups`: recorded with the run's row locked, then signalled to its workflow. */
export function createFollowups(
  { config, temporal }: RunServiceDeps,
  writes: RunWrites,
  approvals: Pick<ReturnType<typeof createApprovalDecisions>, 'settleWithFollowup' | 'signalDecision'>,
) {
  const { claimFor, recordThenCall, withIdempotency, lockTeamRun } = writes;
  return {
    async sendFollowup(
      principal: AuthenticatedPrincipal,
      runId: string,
      body: FollowupRequest,
      idempotencyKey: string | undefined,
    ): Promise<StoredResponse> {
      if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
      if (body.mode === 'orchestrate') {
        throw new ApiError(
          'feature_not_available',
          `\`mode\` "orchestrate" is not available here: ${ORCHESTRATE_MODE_WHY}`,
        );
      }
      const claim = claimFor(principal, `followup:${runId}`, idempotencyKey, body);
      let recorded: RecordedFollowup | undefined;
      let decided = false;
      const response = await recordThenCall(
        (fire) =>
          withIdempotency(principal, claim, async (tx) => {
            const { run, locked } = await lockTeamRun(tx, principal, runId);
            // A blocked run's waiting call takes the message: an answer, or a denial's comment.
            if (locked.state === 'BLOCKED' && (await approvals.settleWithFollowup(tx, principal, run, body.message))) {
              decided = true;
              return {
                status: 200,
                body: { run_id: runId, state: locked.state, outcome: 'live_session' },
                headers: {},
              };
            }
            const outcome = followupOutcome(locked);
            recorded = await recordFollowup(
              tx,
              { runId, message: body.message, mode: body.mode ?? 'normal', creatorUid: principal.uid, locked },
              isTerminal(locked.state),
            );
            const { seq, state } = recorded;
            // The workflow reads follow-ups under the row lock held here, so it sees this one
            // once the transaction commits, and never a rolled-back one.
            fire(() =>
              temporal.workflow.signalWithStart<AgentRunWorkflow, [{ seq: number }]>(RUN_WORKFLOW_TYPE, {
                ...runWorkflowOptions(config, run, state),
                signal: followupSignal,
                signalArgs: [{ seq }],
              }),
            );
            return {
              status: 200,
              body: { run_id: runId, state, followup_id: recorded.id, outcome },
              headers: {},
            };
          }),
        async (tx) => {
          const withdrawn = await withdrawFollowup(tx, runId, recorded!);
          if (withdrawn && claim) await deleteIdempotencyRecord(tx, claim);
          return withdrawn;
        },
      );
      if (decided) await approvals.signalDecision(runId);
      return response;
    },
  };
}
