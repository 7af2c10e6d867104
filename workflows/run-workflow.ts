import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import type { RunState, TerminalRunState } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import {
  followupSignal,
  RunFailureType,
  runStateQuery,
  searchAttributes,
  type RunWorkflowInput,
  type UserFailureDetails,
} from './run-contract';

/**
 * One execution per run (a follow-up after the idle window starts a new one with the same id).
 * The run's durable data lives in PostgreSQL; this workflow drives its state machine and keeps
 * only ids and counters in history.
 */
export async function agentRunWorkflow(input: RunWorkflowInput): Promise<void> {
  const { runId, settings } = input;
  let followupPending = false;
  let state: RunState | 'STARTING' = 'STARTING';
  setHandler(followupSignal, () => {
    followupPending = true;
  });
  setHandler(runStateQuery, () => state);

  const store = proxyActivities<RunActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '500ms', maximumInterval: '30s', nonRetryableErrorTypes: [RunFailureType.RUN_NOT_FOUND] },
  });
  const env = proxyActivities<RunActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: 5,
      nonRetryableErrorTypes: [RunFailureType.USER_FAILURE],
    },
  });
  const agent = proxyActivities<RunActivities>({
    startToCloseTimeout: `${settings.modelRequestTimeoutSeconds + 30}s`,
    heartbeatTimeout: `${settings.heartbeatTimeoutSeconds}s`,
    retry: {
      initialInterval: `${settings.modelRetry.initialIntervalMs}ms`,
      maximumInterval: `${settings.modelRetry.maxIntervalMs}ms`,
      backoffCoefficient: 2,
      maximumAttempts: settings.modelRetry.maxAttempts,
      nonRetryableErrorTypes: [RunFailureType.USER_FAILURE],
    },
  });

  async function transition(turn: number, to: RunState, statusMessage?: RunStatusMessage): Promise<void> {
    await store.recordTransition({ runId, turn, state: to, statusMessage });
    state = to;
    upsertSearchAttributes([{ key: searchAttributes.state, value: to }]);
  }

  /** Runs one turn: from QUEUED to a terminal state. Returns only when the turn is over. */
  async function runTurn(turn: number, firstStep: number): Promise<void> {
    let step = firstStep;
    try {
      if (step === 0) {
        await transition(turn, 'INPROGRESS');
        await env.provisionEnvironment({ runId, turn });
        await env.resolveSkillsAndMcpServers({ runId, turn });
      }
      let deliver = true;
      for (;;) {
        if (deliver || followupPending) {
          followupPending = false;
          await store.deliverFollowups({ runId, turn });
        }
        await agent.runAgentStep({ runId, turn, step });
        step += 1;
        // A follow-up that arrived while the model was working is answered in this turn.
        deliver = false;
        if (!followupPending) break;
        if (workflowInfo().continueAsNewSuggested) {
          await continueAsNew<typeof agentRunWorkflow>({ ...input, resume: { turn, step } });
        }
      }
      await transition(turn, 'SUCCEEDED');
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { to, statusMessage } = classifyFailure(err);
      await transition(turn, to, statusMessage);
    }
  }

  try {
    let turn: number | null;
    let firstStep = 0;
    let idleMinutes: number | undefined;
    if (input.resume) {
      turn = input.resume.turn;
      firstStep = input.resume.step;
      state = 'INPROGRESS';
    } else {
      turn = (await store.beginTurn({ runId })).turn;
      if (turn !== null) state = 'QUEUED';
    }
    for (;;) {
      if (turn !== null) await runTurn(turn, firstStep);
      firstStep = 0;
      idleMinutes ??= (await store.loadIdleTimeout({ runId })).idleTimeoutMinutes;
      const woke = idleMinutes > 0 ? await condition(() => followupPending, idleMinutes * 60_000) : followupPending;
      if (!woke && !followupPending) return;
      if (workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof agentRunWorkflow>({ runId, settings });
      }
      turn = (await store.beginTurn({ runId })).turn;
      if (turn !== null) {
        state = 'QUEUED';
        upsertSearchAttributes([{ key: searchAttributes.state, value: 'QUEUED' }]);
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(async () => {
        const { applied } = await store.recordCancelled({ runId });
        if (applied) {
          state = 'CANCELLED';
          upsertSearchAttributes([{ key: searchAttributes.state, value: 'CANCELLED' }]);
        }
      });
      // A follow-up that raced the cancellation continues the run in a fresh execution.
      if (followupPending) await continueAsNew<typeof agentRunWorkflow>({ runId, settings });
      throw err;
    }
    if (
      err instanceof ActivityFailure &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === RunFailureType.RUN_NOT_FOUND
    ) {
      // The API never committed this run: nothing to do.
      return;
    }
    throw err;
  }
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
  const message = describePlatformFailure(cause);
  return { to: 'ERROR', statusMessage: { message, error_code: 'resource_unavailable', retryable: true } };
}

function describePlatformFailure(cause: unknown): string {
  const base = 'The run stopped because a dependency kept failing after all retries';
  if (cause instanceof Error && cause.message) return `${base}: ${cause.message}`;
  return `${base}.`;
}
