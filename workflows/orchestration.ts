import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ChildWorkflowCancellationType,
  condition,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  type proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import { isTerminal } from '../core/run-state';
import {
  childRunEndedSignal,
  RUN_WORKFLOW_TYPE,
  runWorkflowId,
  type ChildRunEnded,
  type OrchestrationCall,
} from './run-contract';

type Store = ReturnType<typeof proxyLocalActivities<RunActivities>>;

/**
 * A factory agent's `dispatch_agent` and `wait_for_runs`, carried out by its run's workflow: a
 * dispatched run is a child workflow (started once: the start is in this workflow's history), and
 * a wait is a condition on the children's end signals, so a worker crash while waiting resumes
 * the wait on replay instead of repeating anything.
 */
export function createOrchestrator(runId: string, store: Store) {
  /** Children seen ending, by signal or by the database when a wait begins. */
  const ended = new Set<string>();
  setHandler(childRunEndedSignal, ({ runId: child, state }: ChildRunEnded) => {
    if (isTerminal(state)) ended.add(child);
  });

  async function dispatch(turn: number, step: number, call: OrchestrationCall): Promise<void> {
    const prepared = await store.prepareChildRun({ parentRunId: runId, turn, step, call });
    if (!prepared.ok) {
      await store.recordOrchestrationResult({ runId, turn, step, call, output: prepared.error, isError: true });
      return;
    }
    try {
      await startChild(RUN_WORKFLOW_TYPE, {
        ...prepared.workflow,
        // The child outlives this execution (continue-as-new, the idle window's end) and is
        // cancelled explicitly with the run's other descendants (`cancelDescendants`).
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.ABANDON,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await store.recordOrchestrationResult({
      runId,
      turn,
      step,
      call,
      output: JSON.stringify({ run_id: prepared.childRunId, agent: prepared.agent }),
      isError: false,
      details: { child_run_id: prepared.childRunId },
    });
  }

  async function waitForRuns(turn: number, step: number, call: OrchestrationCall): Promise<void> {
    const wanted = await store.childrenToWait({ runId, call });
    if (!wanted.ok) {
      await store.recordOrchestrationResult({ runId, turn, step, call, output: wanted.error, isError: true });
      return;
    }
    for (const id of wanted.ended) ended.add(id);
    const allEnded = () => wanted.runIds.every((id) => ended.has(id));
    let timedOut = false;
    if (wanted.timeoutSeconds === undefined) await condition(allEnded);
    else if (wanted.timeoutSeconds === 0) timedOut = !allEnded();
    else timedOut = !(await condition(allEnded, wanted.timeoutSeconds * 1000));
    const { output } = await store.describeChildren({ runId, runIds: wanted.runIds, timedOut });
    await store.recordOrchestrationResult({
      runId,
      turn,
      step,
      call,
      output,
      isError: false,
      details: { child_run_ids: wanted.runIds },
    });
  }

  return {
    /** Carries out the call and records its result, so that the step can go on after it. */
    carryOut(turn: number, step: number, call: OrchestrationCall): Promise<void> {
      return call.name === 'dispatch_agent' ? dispatch(turn, step, call) : waitForRuns(turn, step, call);
    },
  };
}

/** Cancels every unfinished run below this one (each records who asked first). */
export async function cancelDescendants(runId: string, store: Store): Promise<void> {
  const { runIds } = await store.requestDescendantsCancel({ runId });
  await Promise.all(
    runIds.map(
      (id) =>
        getExternalWorkflowHandle(runWorkflowId(id))
          .cancel()
          .catch(() => undefined), // its workflow closed meanwhile: it ended on its own
    ),
  );
}

/** Tells the parent's workflow that this run's turn ended; a closed parent reads it from the database later. */
export async function tellParent(parentRunId: string, ended: ChildRunEnded): Promise<void> {
  await getExternalWorkflowHandle(runWorkflowId(parentRunId))
    .signal(childRunEndedSignal, ended)
    .catch(() => undefined);
}
