import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  ContinueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { RunActivities } from '../activities';
import type { RunState, TerminalRunState } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import {
  admissionSignal,
  followupSignal,
  provisioningQueue,
  RunFailureType,
  runStateQuery,
  searchAttributes,
  workspaceQueueFor,
  type RunWorkflowInput,
  type UserFailureDetails,
} from './run-contract';
import { cancelDescendants, createOrchestrator, tellParent } from './orchestration';

/** How often one step may lose its workspace worker before the run ends ERROR. */
const MAX_REPROVISIONS = 3;

/**
 * Executions that took this patch provision through the capacity-aware provisioning queue, tell
 * a dead workspace worker by its lapsed lease instead of by how long a task waited, wait for a
 * cancelled step to finish unwinding, and remove an abandoned workspace only if it is still the
 * one they left.
 */
const WORKSPACE_LEASE_PATCH = 'workspace-worker-lease';
/** Executions that took this patch cancel the run's unfinished descendants when it is cancelled. */
const CANCEL_DESCENDANTS_PATCH = 'cancel-descendants';
const DEFAULT_LEASE_SECONDS = 60;
/**
 * Executions that took this patch wait, QUEUED, for a slot of their team (TEAM_MAX_CONCURRENT_RUNS)
 * before each turn starts, and wake the team's waiting runs when a turn ends.
 */
const TEAM_ADMISSION_PATCH = 'team-admission';
/** How often a waiting run looks again for a slot on its own, should a wake-up signal be lost. */
const ADMISSION_RECHECK = '1 minute';

/** The workspace worker's lease lapsed while a task waited for it. */
class WorkspaceWorkerGone extends Error {
  override name = 'WorkspaceWorkerGone';
}

/**
 * One execution per run (a follow-up after the idle window starts a new one with the same id).
 * The run's durable data lives in PostgreSQL; this workflow drives its state machine and keeps
 * only ids, counters and the workspace's task queue in history.
 */
export async function agentRunWorkflow(input: RunWorkflowInput): Promise<void> {
  const { runId, settings } = input;
  let followupPending = false;
  let state: RunState | 'STARTING' = 'STARTING';
  let workspaceQueue = input.workspaceQueue;
  let workspaceId = input.workspaceId;
  const leased = patched(WORKSPACE_LEASE_PATCH);
  const admission = patched(TEAM_ADMISSION_PATCH);
  const leaseSeconds = settings.workerLeaseSeconds ?? DEFAULT_LEASE_SECONDS;
  let slotMayHaveFreed = false;
  /** The turn this execution last admitted or started: a cancel is recorded against it, and only it. */
  let knownTurn: number | undefined;
  setHandler(followupSignal, () => {
    followupPending = true;
  });
  setHandler(admissionSignal, () => {
    slotMayHaveFreed = true;
  });
  setHandler(runStateQuery, () => state);

  // State writes are short, idempotent transactions: local activities keep them off the task
  // queue and out of history (one marker each instead of three events).
  const store = proxyLocalActivities<RunActivities>({
    startToCloseTimeout: '30s',
    retry: { initialInterval: '500ms', maximumInterval: '30s', nonRetryableErrorTypes: [RunFailureType.RUN_NOT_FOUND] },
  });
  const provisioning = proxyActivities<RunActivities>({
    ...(leased ? { taskQueue: provisioningQueue(workflowInfo().taskQueue) } : {}),
    startToCloseTimeout: '24 hours',
    heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [RunFailureType.USER_FAILURE],
    },
  });
  /**
   * Activities on the worker that holds the workspace. A task that waits past the
   * schedule-to-start timeout means a dead worker only if its lease has lapsed (before the
   * patch it always did, and a merely busy worker was taken for a dead one).
   */
  const onWorkspace = (taskQueue: string) =>
    proxyActivities<RunActivities>({
      taskQueue,
      scheduleToStartTimeout: `${settings.workspaceScheduleToStartSeconds}s`,
      // With the patch, a cancelled step has finished unwinding (its commands are gone) before
      // the run records CANCELLED and removes the workspace.
      ...(leased ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
      startToCloseTimeout: '24 hours',
      heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
      retry: {
        initialInterval: `${settings.modelRetry.initialIntervalMs}ms`,
        maximumInterval: `${settings.modelRetry.maxIntervalMs}ms`,
        backoffCoefficient: 2,
        maximumAttempts: settings.modelRetry.maxAttempts,
        nonRetryableErrorTypes: [RunFailureType.USER_FAILURE, RunFailureType.WORKSPACE_LOST],
      },
    });

  const orchestrator = createOrchestrator(runId, store);
  const parent = input.parentRunId ? { parentRunId: input.parentRunId } : {};

  /** Before a history grows too long, at a point where the run holds nothing in memory: starts afresh. */
  async function continueAsNewIfSuggested(): Promise<void> {
    if (!workflowInfo().continueAsNewSuggested) return;
    await continueAsNew<typeof agentRunWorkflow>({
      runId,
      settings,
      workspaceQueue,
      workspaceId,
      workerHost: input.workerHost,
      ...parent,
    });
  }

  /**
   * Waits, QUEUED, until the team's quota admits the run's next turn. Admission is decided in
   * PostgreSQL (in the order runs were queued), so neither a restart nor a replay lets a run in
   * early; the wait is a signal with a periodic look as its fallback.
   */
  async function admitted(): Promise<void> {
    if (!admission) return;
    for (;;) {
      slotMayHaveFreed = false;
      const admission = await store.admitRun({ runId });
      // Absent from results recorded before it was returned.
      if (admission.turn !== undefined) knownTurn = admission.turn;
      if (admission.admitted) return;
      await condition(
        () => slotMayHaveFreed,
        admission.recheckSeconds ? admission.recheckSeconds * 1000 : ADMISSION_RECHECK,
      );
      await continueAsNewIfSuggested();
    }
  }

  /** The run's turn ended: a slot of its team may have freed. */
  async function slotFreed(): Promise<void> {
    if (admission) await store.wakeWaitingRuns({ runId });
  }

  function setState(to: RunState): void {
    state = to;
    upsertSearchAttributes([{ key: searchAttributes.state, value: to }]);
  }

  /** Runs `work` on the workspace worker, provisioning a workspace first (again, if its worker is gone). */
  async function onTheWorkspace<T>(turn: number, work: (queue: string) => Promise<T>): Promise<T> {
    let reason: string | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        if (!workspaceQueue) {
          const pinned = input.workerHost && workspaceQueueFor(workflowInfo().taskQueue, input.workerHost);
          // A pinned run is provisioned on its worker's own queue, waiting there while the worker
          // lives (it may be full), and nowhere else.
          const provisioned = pinned
            ? await whileWorkerLives(pinned, () => onWorkspace(pinned).provisionEnvironment({ runId, turn, reason }))
            : await provisioning.provisionEnvironment({ runId, turn, reason });
          workspaceQueue = provisioned.workspaceQueue;
          if (leased) workspaceId = provisioned.workspaceId;
          const queue = workspaceQueue;
          const { name } = await whileWorkerLives(queue, () =>
            onWorkspace(queue).resolveSkillsAndMcpServers({ runId, turn }),
          );
          if (name) upsertSearchAttributes([{ key: searchAttributes.name, value: name }]);
        }
        const queue = workspaceQueue;
        return await whileWorkerLives(queue, () => work(queue));
      } catch (err) {
        if (!(isWorkspaceLost(err) || err instanceof WorkspaceWorkerGone) || attempt >= MAX_REPROVISIONS) throw err;
        reason = `The worker that held the workspace (${workspaceQueue}) is gone: provisioning a new workspace elsewhere; changes made in the old one are lost.`;
        // Should that worker come back, it removes the abandoned workspace (and only that one).
        void removeWorkspaceOn(workspaceQueue!, '1 hour', workspaceId);
        workspaceQueue = undefined;
        workspaceId = undefined;
      }
    }
  }

  /**
   * Runs `work` (one activity on a workspace queue). When its task waits past the
   * schedule-to-start timeout, the queue's worker is asked about by its lease: a worker that is
   * only busy renews it, and the task is simply scheduled again; one that is gone does not, and
   * its workspace is given up. Costs history only when a task actually waited.
   */
  async function whileWorkerLives<T>(queue: string, work: () => Promise<T>): Promise<T> {
    if (!leased) return work();
    for (;;) {
      try {
        return await work();
      } catch (err) {
        if (!isScheduleToStartTimeout(err)) throw err;
        const { alive } = await store.isWorkspaceWorkerAlive({ workspaceQueue: queue, leaseSeconds });
        if (!alive) throw new WorkspaceWorkerGone(`the worker of ${queue} stopped renewing its lease`);
      }
    }
  }

  /** Works one turn from INPROGRESS to a terminal state, starting at `firstStep`. */
  async function runTurn(turn: number, firstStep: number): Promise<void> {
    let step = firstStep;
    let to: TerminalRunState = 'SUCCEEDED';
    let statusMessage: RunStatusMessage | undefined;
    try {
      await onTheWorkspace(turn, async () => undefined);
      for (;;) {
        // Each step first appends the follow-ups recorded so far, so they join at this boundary.
        followupPending = false;
        const runStep = () => onTheWorkspace(turn, (queue) => onWorkspace(queue).runAgentStep({ runId, turn, step }));
        let outcome = await runStep();
        // A factory agent's dispatch or wait is carried out here; the step then goes on after it.
        while (outcome.orchestration) {
          for (const call of outcome.orchestration) await orchestrator.carryOut(turn, step, call);
          outcome = await runStep();
        }
        const { done } = outcome;
        step += 1;
        if (done && !followupPending) break;
        if (workflowInfo().continueAsNewSuggested) {
          await continueAsNew<typeof agentRunWorkflow>({
            ...input,
            workspaceQueue,
            workspaceId,
            resume: { turn, step },
          });
        }
      }
    } catch (err) {
      if (isCancellation(err) || err instanceof ContinueAsNew) throw err;
      ({ to, statusMessage } = classifyFailure(err));
    }
    await store.recordTransition({ runId, turn, state: to, statusMessage });
    setState(to);
    await slotFreed();
    if (input.parentRunId) await tellParent(input.parentRunId, { runId, state: to });
  }

  function removeWorkspaceOn(taskQueue: string, scheduleToStartTimeout: string, id?: string): Promise<void> {
    return proxyActivities<RunActivities>({
      taskQueue,
      scheduleToStartTimeout,
      startToCloseTimeout: '5 minutes',
      retry: { maximumAttempts: 3 },
    })
      .removeWorkspace(id === undefined ? { runId } : { runId, workspaceId: id })
      .then(
        () => undefined,
        () => undefined, // a worker that is gone took its workspace with it
      );
  }

  async function removeWorkspace(): Promise<void> {
    if (!workspaceQueue) return;
    const queue = workspaceQueue;
    const id = workspaceId;
    workspaceQueue = undefined;
    workspaceId = undefined;
    // A live worker may be slow to get to it; a dead one's workspace went with it.
    await removeWorkspaceOn(
      queue,
      leased ? `${leaseSeconds * 2}s` : `${settings.workspaceScheduleToStartSeconds}s`,
      id,
    );
  }

  try {
    await admitted();
    let { turn, idleTimeoutMinutes } = await store.startTurn({ runId });
    if (turn !== null) knownTurn = turn;
    let firstStep = input.resume && input.resume.turn === turn ? input.resume.step : 0;
    for (;;) {
      if (turn !== null) {
        setState('INPROGRESS');
        await runTurn(turn, firstStep);
        firstStep = 0;
      }
      const woke = idleTimeoutMinutes > 0 ? await condition(() => followupPending, idleTimeoutMinutes * 60_000) : false;
      if (!woke && !followupPending) {
        await removeWorkspace();
        if (!followupPending) return;
      }
      await continueAsNewIfSuggested();
      followupPending = false;
      await admitted();
      ({ turn, idleTimeoutMinutes } = await store.startTurn({ runId }));
      if (turn !== null) knownTurn = turn;
    }
  } catch (err) {
    if (isCancellation(err)) {
      // Signals from before the cancellation are answered by the database check below.
      followupPending = false;
      const { followupAfterCancel } = await CancellationScope.nonCancellable(async () => {
        const recorded = await store.recordCancelled(knownTurn === undefined ? { runId } : { runId, turn: knownTurn });
        if (recorded.applied) setState('CANCELLED');
        // A run cancelled while waiting held no slot: waking the team then changes nothing.
        if (recorded.applied) await slotFreed();
        if (patched(CANCEL_DESCENDANTS_PATCH)) await cancelDescendants(runId, store);
        if (input.parentRunId && recorded.applied) await tellParent(input.parentRunId, { runId, state: 'CANCELLED' });
        await removeWorkspace();
        return recorded;
      });
      // A follow-up sent after the cancel request continues the run in a fresh execution.
      if (followupPending || followupAfterCancel)
        await continueAsNew<typeof agentRunWorkflow>({ runId, settings, workerHost: input.workerHost, ...parent });
      throw err;
    }
    if (
      err instanceof ActivityFailure &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === RunFailureType.RUN_NOT_FOUND
    ) {
      // The API's transaction that started this workflow rolled back: there is no run.
      return;
    }
    throw err;
  }
}

function isScheduleToStartTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

function isWorkspaceLost(err: unknown): boolean {
  if (isScheduleToStartTimeout(err)) return true;
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === RunFailureType.WORKSPACE_LOST
  );
}

function classifyFailure(err: unknown): { to: TerminalRunState; statusMessage: RunStatusMessage } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === RunFailureType.USER_FAILURE) {
    const details = (cause.details?.[0] ?? {}) as Partial<UserFailureDetails>;
    return {
      to: 'FAILED',
      statusMessage: { message: cause.message, error_code: details.errorCode ?? 'invalid_request', retryable: false },
    };
  }
  const reason = cause instanceof Error && cause.message ? `: ${cause.message}` : '.';
  return {
    to: 'ERROR',
    statusMessage: {
      message: `The run stopped because a dependency kept failing after all retries${reason}`,
      error_code: 'resource_unavailable',
      retryable: true,
    },
  };
}
