import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Logger } from '../core/logger';
import { isTerminal, type RunState } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import { observeRunEnded, observeRunQueued } from '../core/metrics';
import {
  applyCancellation,
  applyTransition,
  followupsSentAfterCancel,
  lockRun,
  lockRunCreation,
  reopenRun,
  secondsQueued,
} from '../db/run-store';
import { markWorkflowStarted } from '../db/run-creation';
import { leaseStatus } from '../db/worker-leases';
import { lastAgentMessage } from '../db/agent-answers';
import { admitRunTurn, admitStartedTurn, runsToAdmitNext, teamOfRun } from '../db/team-admission';
import { admissionSignal, RunFailureType, runWorkflowId } from '../workflows/run-contract';
import type { ActivityDeps } from './deps';

/** How much of the agent's answer a SUCCEEDED run's `status_message.message` holds. */
export const STATUS_ANSWER_CHARS = 4000;

function cutAnswer(text: string): string {
  return text.length > STATUS_ANSWER_CHARS ? `${text.slice(0, STATUS_ANSWER_CHARS - 1)}…` : text;
}

/** How much of a FAILED or ERROR run's status message its state line carries. */
const LOGGED_MESSAGE_CHARS = 200;

/**
 * The one line a run's state change gets (after its transaction committed): the run, the turn,
 * the state and, for a failure, its error code and the first line of its message. An expected
 * failure (no provider, a refused request, a cancel) is this line and nothing more.
 */
function logStateChange(
  logger: Logger,
  change: { runId: string; turn?: number; state: RunState; statusMessage?: RunStatusMessage },
): void {
  const { statusMessage, state } = change;
  const failed = state === 'FAILED' || state === 'ERROR';
  const firstLine = statusMessage?.message.split('\n', 1)[0] ?? '';
  logger.info('run state changed', {
    run_id: change.runId,
    turn: change.turn,
    state,
    ...(statusMessage?.error_code ? { error_code: statusMessage.error_code } : {}),
    ...(failed && firstLine
      ? {
          message: firstLine.length > LOGGED_MESSAGE_CHARS ? `${firstLine.slice(0, LOGGED_MESSAGE_CHARS)}…` : firstLine,
        }
      : {}),
  });
}

/** Activities that write the run's state to PostgreSQL; each is one idempotent transaction. */
export function createRunStoreActivities({ dataSource, config, temporal, logger }: ActivityDeps) {
  const maxConcurrent = config.quotas.teamMaxConcurrentRuns;

  /** Tells the team's oldest waiting runs, as many as it has free slots, to look again. */
  async function wakeTeam(teamId: string): Promise<string[]> {
    const runIds = await dataSource.transaction((tx) => runsToAdmitNext(tx, teamId, maxConcurrent));
    for (const id of runIds) {
      await temporal.workflow
        .getHandle(runWorkflowId(id))
        .signal(admissionSignal)
        .catch((err: unknown) => {
          // Its workflow closed meanwhile (the reconciler settles the run); the others still go.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
    }
    return runIds;
  }

  return {
    /**
     * Admits the run's turn under its team's TEAM_MAX_CONCURRENT_RUNS (in the order runs were
     * queued), or records on the run that it waits for a slot. Once admitted, wakes the next
     * waiting runs if slots are still free (they may have looked before this older run did).
     */
    async admitRun({
      runId,
    }: {
      runId: string;
    }): Promise<{ admitted: boolean; turn: number; recheckSeconds?: number }> {
      const admission = await dataSource.transaction((tx) => admitRunTurn(tx, runId, maxConcurrent));
      if (!admission) {
        throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, RunFailureType.RUN_NOT_FOUND);
      }
      const { turn } = admission;
      if (!admission.admitted) {
        logger.debug('run waits for a slot of its team', { run_id: runId });
        return {
          admitted: false,
          turn,
          ...(admission.recheckSeconds ? { recheckSeconds: admission.recheckSeconds } : {}),
        };
      }
      await wakeTeam(admission.teamId);
      return { admitted: true, turn };
    },

    /** A turn of the run ended (or it was cancelled): the team's oldest waiting runs look again for a slot. */
    async wakeWaitingRuns({ runId }: { runId: string }): Promise<{ woken: string[] }> {
      const teamId = await teamOfRun(dataSource.manager, runId);
      return { woken: teamId ? await wakeTeam(teamId) : [] };
    },

    /**
     * Whether the worker serving a workspace queue is alive: it renewed its lease within its own
     * lease length (`leaseSeconds`, the run's setting, only for a worker that never said). When no
     * worker at all renewed lately, the database was away, not the workers: they count as alive.
     */
    async isWorkspaceWorkerAlive({
      workspaceQueue,
      leaseSeconds,
    }: {
      workspaceQueue: string;
      leaseSeconds: number;
    }): Promise<{ alive: boolean; secondsSinceRenewal: number | null }> {
      const lease = await leaseStatus(dataSource.manager, workspaceQueue);
      const limit = lease.leaseSeconds ?? leaseSeconds;
      const nobodyRenewed = lease.freshestAge === null || lease.freshestAge > limit;
      const alive = lease.age !== null && (lease.age <= limit || nobodyRenewed);
      return { alive, secondsSinceRenewal: lease.age };
    },

    /**
     * Starts (or resumes) the turn this execution works on and marks the run INPROGRESS: the
     * current turn when the run is queued or in progress, a new one when it ended and follow-ups
     * wait, or null when there is nothing to do.
     */
    async startTurn({ runId }: { runId: string }): Promise<{ turn: number | null; idleTimeoutMinutes: number }> {
      const changes: { runId: string; turn: number; state: RunState }[] = [];
      const started = await dataSource.transaction(async (tx) => {
        // Waits for the API's transaction that created the run or recorded a follow-up.
        await lockRunCreation(tx, runId);
        const run = await lockRun(tx, runId);
        if (!run) {
          throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, RunFailureType.RUN_NOT_FOUND);
        }
        await markWorkflowStarted(tx, runId);
        let turn: number | null = run.turn;
        if (isTerminal(run.state)) {
          turn = run.pendingFollowups > 0 ? await reopenRun(tx, runId, run.turn) : null;
          if (turn !== null) changes.push({ runId, turn, state: 'QUEUED' });
        }
        if (turn !== null) {
          if (await applyTransition(tx, { runId, turn, state: 'INPROGRESS' })) {
            changes.push({ runId, turn, state: 'INPROGRESS' });
            observeRunQueued(await secondsQueued(tx, runId, turn));
          }
          // A turn started without admission (by workflow code from before it) still counts.
          await admitStartedTurn(tx, runId);
        }
        return { turn, idleTimeoutMinutes: run.idleTimeoutMinutes };
      });
      for (const change of changes) logStateChange(logger, change);
      return started;
    },

    /** A SUCCEEDED run's status message is the agent's answer (cut; whole in the conversation). */
    async recordTransition(input: {
      runId: string;
      turn: number;
      state: RunState;
      statusMessage?: RunStatusMessage;
    }): Promise<{ applied: boolean }> {
      const applied = await dataSource.transaction(async (tx) => {
        let statusMessage = input.statusMessage;
        if (input.state === 'SUCCEEDED' && !statusMessage) {
          const answer = await lastAgentMessage(tx, input.runId, input.turn);
          if (answer) statusMessage = { message: cutAnswer(answer) };
        }
        return applyTransition(tx, { ...input, statusMessage });
      });
      if (applied && isTerminal(input.state)) observeRunEnded(input.state, input.statusMessage?.error_code);
      if (applied) logStateChange(logger, input);
      return { applied };
    },

    /**
     * Records CANCELLED and says whether a follow-up was sent after the cancel request (it
     * continues the run; one sent before waits for the next follow-up).
     */
    async recordCancelled({
      runId,
      turn,
    }: {
      runId: string;
      /** The turn the execution was on when it was cancelled (absent in histories from before it was named). */
      turn?: number;
    }): Promise<{ applied: boolean; followupAfterCancel: boolean }> {
      const recorded = await dataSource.transaction(async (tx) => {
        if (turn !== undefined) {
          const locked = await lockRun(tx, runId);
          // A follow-up sent after the cancel has reopened the run in a later turn (this is a
          // retried recording, or the turn ended before it): that turn is not cancelled, it continues.
          if (locked && locked.turn > turn) return { applied: false, followupAfterCancel: true };
        }
        const applied = await applyCancellation(tx, runId, turn);
        return { applied, followupAfterCancel: await followupsSentAfterCancel(tx, runId) };
      });
      if (recorded.applied) observeRunEnded('CANCELLED', undefined);
      if (recorded.applied) logStateChange(logger, { runId, turn, state: 'CANCELLED' });
      return recorded;
    },
  };
}
