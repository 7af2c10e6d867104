import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
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

  // State writes are short, idempotent transactions: local activities keep them off the task
  // queue and out of history (one marker each instead of three events).
  const store = proxyLocalActivities<RunActivities>({
    startToCloseTimeout: '30s',
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

  function setState(to: RunState): void {
    state = to;
    upsertSearchAttributes([{ key: searchAttributes.state, value: to }]);
  }

  /** Works one turn from INPROGRESS to a terminal state, starting at `firstStep`. */
  async function runTurn(turn: number, firstStep: number): Promise<void> {
    let step = firstStep;
    let to: TerminalRunState = 'SUCCEEDED';
    let statusMessage: RunStatusMessage | undefined;
    try {
      if (step === 0) {
        await env.provisionEnvironment({ runId, turn });
        await env.resolveSkillsAndMcpServers({ runId, turn });
      }
      for (;;) {
        // Each step first appends the follow-ups recorded so far, so they join at this boundary.
        followupPending = false;
        await agent.runAgentStep({ runId, turn, step });
        step += 1;
        if (!followupPending) break;
        if (workflowInfo().continueAsNewSuggested) {
          await continueAsNew<typeof agentRunWorkflow>({ ...input, resume: { turn, step } });
        }
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      ({ to, statusMessage } = classifyFailure(err));
    }
    await store.recordTransition({ runId, turn, state: to, statusMessage });
    setState(to);
  }

  try {
    let { turn, idleTimeoutMinutes } = await store.startTurn({ runId });
    let firstStep = input.resume && input.resume.turn === turn ? input.resume.step : 0;
    for (;;) {
      if (turn !== null) {
        setState('INPROGRESS');
        await runTurn(turn, firstStep);
        firstStep = 0;
      }
      const woke = idleTimeoutMinutes > 0 ? await condition(() => followupPending, idleTimeoutMinutes * 60_000) : false;
      if (!woke && !followupPending) return;
      if (workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof agentRunWorkflow>({ runId, settings });
      }
      ({ turn, idleTimeoutMinutes } = await store.startTurn({ runId }));
    }
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(async () => {
        const { applied } = await store.recordCancelled({ runId });
        if (applied) setState('CANCELLED');
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
      // The API's transaction that started this workflow rolled back: there is no run.
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
