import { CancellationScope, isCancellation, patched } from '@temporalio/workflow';
import { cancelDescendants, tellParent } from './orchestration';
import type { RunWorkflowInput } from './run-contract';
import { isRunNotFound } from './run/failures';
import { CANCEL_DESCENDANTS_PATCH } from './run/patches';
import { RunExecution } from './run/run-execution';

/**
 * One execution per run (a follow-up after the idle window starts a new one with the same id).
 * The run's durable data lives in PostgreSQL; this workflow drives its state machine and keeps
 * only ids, counters and the workspace's task queue in history. The story of a run:
 * admitted by its team's quota, it works a turn, waits its idle window for a follow-up (which
 * starts the next turn), and gives up its workspace when none comes; a cancel ends it wherever it is.
 */
export async function agentRunWorkflow(input: RunWorkflowInput): Promise<void> {
  const run = new RunExecution(input);
  try {
    await run.admitted();
    let { turn, idleTimeoutMinutes } = await run.startTurn();
    let firstStep = input.resume && input.resume.turn === turn ? input.resume.step : 0;
    for (;;) {
      if (turn !== null) {
        run.setState('INPROGRESS');
        await run.runTurn(turn, firstStep);
        firstStep = 0;
      }
      const woke = await run.followupWithin(idleTimeoutMinutes);
      if (!woke && !run.followupPending) {
        await run.workspace.remove();
        if (!run.followupPending) return;
      }
      await run.continueAsNewIfSuggested();
      run.followupPending = false;
      await run.admitted();
      ({ turn, idleTimeoutMinutes } = await run.startTurn());
    }
  } catch (err) {
    if (isCancellation(err)) await cancelled(run, input);
    // The API's transaction that started this workflow rolled back: there is no run.
    if (isRunNotFound(err)) return;
    throw err;
  }
}

/**
 * Records the cancel (of the turn it was for), frees the run's slot, cancels its descendants,
 * tells its parent and gives up its workspace; a follow-up sent after the cancel request
 * continues the run in a fresh execution.
 */
async function cancelled(run: RunExecution, input: RunWorkflowInput): Promise<void> {
  const { runId } = input;
  const { store } = run.activities;
  // Signals from before the cancellation are answered by the database check below.
  run.followupPending = false;
  const { followupAfterCancel } = await CancellationScope.nonCancellable(async () => {
    const recorded = await store.recordCancelled(
      run.knownTurn === undefined ? { runId } : { runId, turn: run.knownTurn },
    );
    if (recorded.applied) run.setState('CANCELLED');
    // A run cancelled while waiting held no slot: waking the team then changes nothing.
    if (recorded.applied) await run.slotFreed();
    if (patched(CANCEL_DESCENDANTS_PATCH)) await cancelDescendants(runId, store);
    if (input.parentRunId && recorded.applied) await tellParent(input.parentRunId, { runId, state: 'CANCELLED' });
    await run.workspace.remove();
    return recorded;
  });
  if (run.followupPending || followupAfterCancel) await run.continueAfterCancel();
}
