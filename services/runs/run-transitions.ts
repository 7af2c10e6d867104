import type { DataSource } from 'typeorm';
import type { Logger } from '../../core/logger';
import { observeRunEnded, observeRunQueued } from '../../core/metrics';
import { isTerminal, type RunState } from '../../core/run-state';
import type { RunStatusMessage } from '../../core/run-types';
import { lastAgentMessage } from '../../db/agent-answers';
import { markWorkflowStarted, withdrawUnstartedRun } from '../../db/run-creation';
import {
  applyCancellation,
  applyTransition,
  followupsSentAfterCancel,
  lockRun,
  lockRunCreation,
  reopenRun,
  secondsQueued,
} from '../../db/run-store';
import { admitStartedTurn } from '../../db/team-admission';

/** How much of the agent's answer a SUCCEEDED run's `status_message.message` holds. */
export const STATUS_ANSWER_CHARS = 4000;

function cutAnswer(text: string): string {
  return text.length > STATUS_ANSWER_CHARS ? `${text.slice(0, STATUS_ANSWER_CHARS - 1)}…` : text;
}

/** How much of a FAILED or ERROR run's status message its state line carries. */
const LOGGED_MESSAGE_CHARS = 200;

/** A change of a run's state, as it is recorded and logged. */
export interface RunStateChange {
  runId: string;
  turn?: number;
  state: RunState;
  statusMessage?: RunStatusMessage;
}

/**
 * The one line a run's state change gets (after its transaction committed): the run, the turn,
 * the state and, for a failure, its error code and the first line of its message. An expected
 * failure (no provider, a refused request, a cancel) is this line and nothing more.
 */
export function logStateChange(logger: Logger, change: RunStateChange): void {
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

/**
 * How a run's state moves after its creation, for its workflow's activities, the cancel of a run
 * without a workflow and the reconciler alike: each move is one idempotent transaction over the
 * rules of core/run-state.ts (db/run-store.ts applies their SQL form), counted in the metrics and
 * logged once it committed.
 */
export function createRunTransitions({ dataSource, logger }: { dataSource: DataSource; logger: Logger }) {
  return {
    /**
     * Starts (or resumes) the turn an execution works on and marks the run INPROGRESS: the
     * current turn when the run is queued or in progress, a new one when it ended and follow-ups
     * wait, or a null turn when there is nothing to do; null when the run does not exist.
     */
    async startTurn(runId: string): Promise<{ turn: number | null; idleTimeoutMinutes: number } | null> {
      const changes: RunStateChange[] = [];
      const started = await dataSource.transaction(async (tx) => {
        // Waits for the API's transaction that created the run or recorded a follow-up.
        await lockRunCreation(tx, runId);
        const run = await lockRun(tx, runId);
        if (!run) return null;
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

    /**
     * Moves the run forward within `turn`; a stale or repeated move changes nothing. A SUCCEEDED
     * run's status message is the agent's answer (cut; whole in the conversation).
     */
    async recordTransition(change: Required<Pick<RunStateChange, 'turn'>> & RunStateChange): Promise<boolean> {
      const applied = await dataSource.transaction(async (tx) => {
        let statusMessage = change.statusMessage;
        if (change.state === 'SUCCEEDED' && !statusMessage) {
          const answer = await lastAgentMessage(tx, change.runId, change.turn);
          if (answer) statusMessage = { message: cutAnswer(answer) };
        }
        return applyTransition(tx, { ...change, statusMessage });
      });
      if (applied && isTerminal(change.state)) observeRunEnded(change.state, change.statusMessage?.error_code);
      if (applied) logStateChange(logger, change);
      return applied;
    },

    /**
     * Records CANCELLED (in `turn`, when given: a follow-up sent after the cancel has reopened the
     * run in a later turn, which continues) and says whether a follow-up was sent after the
     * cancel request (it continues the run; one sent before waits for the next follow-up).
     */
    async recordCancelled(runId: string, turn?: number): Promise<{ applied: boolean; followupAfterCancel: boolean }> {
      const recorded = await dataSource.transaction(async (tx) => {
        if (turn !== undefined) {
          const locked = await lockRun(tx, runId);
          if (locked && locked.turn > turn) return { applied: false, followupAfterCancel: true };
        }
        const applied = await applyCancellation(tx, runId, turn);
        return { applied, followupAfterCancel: await followupsSentAfterCancel(tx, runId) };
      });
      if (recorded.applied) observeRunEnded('CANCELLED', undefined);
      if (recorded.applied) logStateChange(logger, { runId, turn, state: 'CANCELLED' });
      return recorded;
    },

    /**
     * Takes back a run whose workflow never started (its start failed, so its creator was told to
     * retry); false, changing nothing, when the workflow has started it after all.
     */
    withdrawUnstarted(runId: string): Promise<boolean> {
      return dataSource.transaction((tx) => withdrawUnstartedRun(tx, runId));
    },
  };
}

export type RunTransitions = ReturnType<typeof createRunTransitions>;
