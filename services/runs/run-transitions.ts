import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '../../core/logger';
import { observeRunEnded, observeRunQueued } from '../../core/metrics';
import { isTerminal, type RunState } from '../../core/run-state';
import type { RunStatusMessage } from '../../core/run-types';
import { lastAgentMessage } from '../../db/agent-answers';
import { planOfTurn, type PlanArtifact } from '../../db/plan-reads';
import { markWorkflowStarted, withdrawUnstartedRun } from '../../db/run-creation';
import {
  applyCancellation,
  applyTransition,
  followupsSentAfterCancel,
  lockRun,
  lockRunCreation,
  reopenRun,
  secondsQueued,
  unblockRun,
} from '../../db/run-store';
import { lastDecidedApproval, pendingApprovalsOf } from '../../db/run-approval-reads';
import { cancelWaitingCalls } from './approval-records';
import { admitStartedTurn } from '../../db/team-admission';

/** How much of the agent's answer a SUCCEEDED run's `status_message.message` holds. */
export const STATUS_ANSWER_CHARS = 4000;

function cutAnswer(text: string): string {
  return text.length > STATUS_ANSWER_CHARS ? `${text.slice(0, STATUS_ANSWER_CHARS - 1)}…` : text;
}

/** The status of a turn that ended with a plan: it waits for the user's word (docs/guide/plan-mode.md). */
export function planAwaitsMessage(plan: Pick<PlanArtifact, 'title' | 'version' | 'artifactUid'>): string {
  return `Plan "${plan.title}" (version ${plan.version}) awaits approval: send a follow-up to carry it out, or one in plan mode to revise it. The plan: GET /api/v1/agent/artifacts/${plan.artifactUid}.`;
}

/** A SUCCEEDED turn's status message: the plan it made waits, or else the agent's answer (cut). */
async function succeededMessage(tx: EntityManager, runId: string, turn: number): Promise<RunStatusMessage | undefined> {
  const plan = await planOfTurn(tx, runId, turn);
  if (plan) return { message: planAwaitsMessage(plan) };
  const answer = await lastAgentMessage(tx, runId, turn);
  return answer ? { message: cutAnswer(answer) } : undefined;
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
        // Blocked, its call decided: the execution that waited continued as new before it went on.
        if (turn !== null && run.state === 'BLOCKED' && (await unblocked(tx, runId, turn))) {
          changes.push({ runId, turn, state: 'INPROGRESS' });
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
     * A blocked run whose call was decided works again (BLOCKED → INPROGRESS); false, changing
     * nothing, while a call of it still waits or when it is not blocked.
     */
    async resume(runId: string, turn: number): Promise<boolean> {
      const resumed = await dataSource.transaction(async (tx) => {
        const run = await lockRun(tx, runId);
        return run?.state === 'BLOCKED' && run.turn === turn && unblocked(tx, runId, turn);
      });
      if (resumed) logStateChange(logger, { runId, turn, state: 'INPROGRESS' });
      return resumed;
    },

    /**
     * Moves the run forward within `turn`; a stale or repeated move changes nothing. A SUCCEEDED
     * run's status message says that its plan waits, or is the agent's answer (cut; whole in the
     * conversation).
     */
    async recordTransition(change: Required<Pick<RunStateChange, 'turn'>> & RunStateChange): Promise<boolean> {
      const applied = await dataSource.transaction(async (tx) => {
        let statusMessage = change.statusMessage;
        if (change.state === 'SUCCEEDED' && !statusMessage) {
          statusMessage = await succeededMessage(tx, change.runId, change.turn);
        }
        const moved = await applyTransition(tx, { ...change, statusMessage });
        // A turn that ends (an interrupt, a failure) leaves no call waiting for a person.
        if (moved && isTerminal(change.state)) await cancelWaitingCalls(tx, change.runId);
        return moved;
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
        if (applied) await cancelWaitingCalls(tx, runId);
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

/** Unblocks the run (row locked) unless a call of it still waits; says whether it did. */
async function unblocked(tx: EntityManager, runId: string, turn: number): Promise<boolean> {
  if ((await pendingApprovalsOf(tx, [runId])).size) return false;
  const decided = await lastDecidedApproval(tx, runId, turn);
  return unblockRun(tx, { runId, turn, approvalId: decided?.approvalId ?? 'none' });
}
