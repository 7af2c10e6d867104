import type { DataSource } from 'typeorm';
import { claimHarnessInvocation, type PendingMessage } from '../../db/harness-state';
import { type HarnessState } from '../../db/harness-state-reads';
import { appendRunEvent } from '../../db/run-events';
import { deliverFollowups, lockRunForStep } from '../../db/run-store';
import { conversationFromEvents } from '../agent-step/conversation-from-events';

/** What an interrupted invocation's successor is told, resuming the CLI's session. */
export const RESUME_AFTER_INTERRUPTION =
  '[The previous attempt at this turn was interrupted: the worker running it stopped. Continue the task from where it was left; check the state of the workspace before repeating anything.]';

/** What a CLI's step is to do, once it has claimed the invocation. */
export type HarnessClaim =
  /** The stored run has moved past this turn: do nothing (see `turnIsOver`). */
  | { kind: 'turn-ended' }
  /** Nothing new since the CLI last answered (a retried step whose invocation had finished). */
  | { kind: 'nothing-new' }
  | { kind: 'invoke'; prompt: string; state: HarnessState; pending: PendingMessage[]; attempt: number };

/**
 * Claims invocation `stepKey` of the run's CLI under the run's lock, delivering the follow-ups
 * recorded so far, and decides what the CLI is told: the prompt or follow-ups not handed over
 * yet, or, for an invocation a dead worker left unfinished, to go on (with a notice saying so).
 */
export async function claimHarnessStep(
  dataSource: DataSource,
  at: {
    runId: string;
    turn: number;
    stepKey: string;
    harness: string;
    title: string;
    /** What a step that waited for a person's decision on a call of its CLI is resumed with. */
    decided?: string;
  },
): Promise<HarnessClaim> {
  const { runId, turn, stepKey } = at;
  const claimed = await dataSource.transaction(async (tx) => {
    if (!(await lockRunForStep(tx, runId, turn))) return null;
    await deliverFollowups(tx, runId, turn);
    return claimHarnessInvocation(tx, runId, at.harness, stepKey);
  });
  if (!claimed) return { kind: 'turn-ended' };
  const { state, pending } = claimed;
  // Counted by the service, not taken from Temporal: a step rescheduled after its worker's
  // queue timed out starts over at Temporal attempt 1, and its events need keys of their own.
  const attempt = state.stepAttempt;
  if (pending.length) {
    const prompt = conversationFromEvents(pending.map((p) => ({ kind: p.kind, payload: p.payload })))
      .map((m) => m.content)
      .join('\n\n');
    const told = at.decided !== undefined ? `${at.decided}\n\n${prompt}` : prompt;
    return { kind: 'invoke', prompt: told, state, pending, attempt };
  }
  if (state.startedStep !== stepKey || state.finishedStep === stepKey) return { kind: 'nothing-new' };
  // The invocation was ended for a call that waited; the decision is its successor's message.
  if (at.decided !== undefined) return { kind: 'invoke', prompt: at.decided, state, pending, attempt };
  await appendRunEvent(dataSource.manager, {
    runId,
    eventKey: `h-resume-${stepKey}-i${attempt}`,
    kind: 'notice',
    turn,
    payload: {
      message: `${at.title} was interrupted (its worker stopped); attempt ${attempt} resumes ${state.sessionId ? `its session ${state.sessionId}` : 'the turn in a new session'}.`,
    },
  });
  return { kind: 'invoke', prompt: RESUME_AFTER_INTERRUPTION, state, pending, attempt };
}
