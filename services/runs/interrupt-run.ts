import { WorkflowNotFoundError } from '@temporalio/client';
import { ApiError } from '../../core/api-error';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { interruptSignal, runWorkflowId } from '../../workflows/run-contract';
import type { RunServiceDeps, RunWrites } from './run-writes';

/** `POST /agent/runs/{id}/interrupt`: the turn in progress stops; the run stays, for the next follow-up. */
export function createInterruption({ dataSource, temporal }: RunServiceDeps, writes: RunWrites) {
  const { withinDeadline, lockTeamRun } = writes;
  const notWorking = (runId: string, state: string) =>
    new ApiError(
      'operation_not_supported',
      `Run ${runId} is ${state}: only an INPROGRESS run has a turn to interrupt (to end a run, cancel it).`,
    );
  return {
    /**
     * Signals the run's workflow, which cancels the turn's activities (the model call or command in
     * flight) and ends the turn SUCCEEDED, saying it was interrupted. The signal is durable once
     * Temporal has it; a worker that dies meanwhile does not lose it.
     */
    async interruptRun(principal: AuthenticatedPrincipal, runId: string): Promise<void> {
      const state = await dataSource.transaction(async (tx) => (await lockTeamRun(tx, principal, runId)).locked.state);
      if (state !== 'INPROGRESS') throw notWorking(runId, state);
      try {
        await withinDeadline(() => temporal.workflow.getHandle(runWorkflowId(runId)).signal(interruptSignal));
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) throw notWorking(runId, 'not running');
        throw err;
      }
    },
  };
}
