import { WorkflowNotFoundError } from '@temporalio/client';
import { ApiError } from '../../core/api-error';
import { isTerminal } from '../../core/run-state';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { recordCancelRequest } from '../../db/run-store';
import { runWorkflowId } from '../../workflows/run-contract';
import type { RunServiceDeps, RunWrites } from './run-writes';

/** `POST /agent/runs/{id}/cancel`. */
export function createCancellation(
  { dataSource, temporal }: Pick<RunServiceDeps, 'dataSource' | 'temporal'>,
  writes: RunWrites,
) {
  const { withinDeadline, lockTeamRun, transitions } = writes;
  return {
    /**
     * The request is recorded first (who asked, and the last follow-up it saw), then Temporal is
     * asked to cancel; the record stays when that fails, since the caller is told to retry and
     * a cancellation that did reach Temporal must still name who asked for it.
     */
    async cancelRun(principal: AuthenticatedPrincipal, runId: string): Promise<void> {
      const turn = await dataSource.transaction(async (tx) => {
        const { locked } = await lockTeamRun(tx, principal, runId);
        if (isTerminal(locked.state)) {
          // 400, as the wire contract fixes it for `operation_not_supported`.
          throw new ApiError(
            'operation_not_supported',
            `Run ${runId} is already ${locked.state}; only QUEUED or INPROGRESS runs can be cancelled.`,
          );
        }
        await recordCancelRequest(tx, runId, `${principal.displayName} (${principal.uid})`);
        return locked.turn;
      });
      try {
        await withinDeadline(() => temporal.workflow.getHandle(runWorkflowId(runId)).cancel());
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        // No workflow is running for this run (an operator terminated it): record the end here.
        // Only the turn the request was about: a follow-up may have reopened the run since.
        await transitions.recordCancelled(runId, turn);
      }
    },
  };
}
