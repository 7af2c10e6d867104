/** Run states the service uses; the one definition shared by API, workflow, activities and DB. */
export const RunState = {
  QUEUED: 'QUEUED',
  INPROGRESS: 'INPROGRESS',
  /** The agent's call waits for a person (an approval or an answer); the run holds no slot meanwhile. */
  BLOCKED: 'BLOCKED',
  SUCCEEDED: 'SUCCEEDED',
  FAILED: 'FAILED',
  ERROR: 'ERROR',
  CANCELLED: 'CANCELLED',
} as const;
export type RunState = (typeof RunState)[keyof typeof RunState];

export const RUN_STATES: readonly RunState[] = Object.values(RunState);

export type TerminalRunState = 'SUCCEEDED' | 'FAILED' | 'ERROR' | 'CANCELLED';

export const TERMINAL_STATES: readonly TerminalRunState[] = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];

export function isTerminal(state: RunState): state is TerminalRunState {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/**
 * Order of states within one turn of a run. A write may only move a run forward in this
 * order; a follow-up after a terminal state starts a new turn at QUEUED. The SQL guard of
 * db/run-store.ts is built from this function: the order is written down once.
 */
export function stateRank(state: RunState): number {
  if (state === 'QUEUED') return 0;
  // A blocked run is as far on in its turn as a working one: it moves between the two only by
  // the explicit `block` and `unblock` moves, and on to any terminal state.
  if (state === 'INPROGRESS' || state === 'BLOCKED') return 1;
  return 2;
}

/**
 * The official clients' `task_status` list filter: a run's state as a task board reads it.
 * `running` matches a run that is, or has a descendant that is, still queued or working; the
 * others match the run's own state only.
 */
export const TASK_STATUSES = ['running', 'failed', 'blocked', 'cancelled', 'complete'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TASK_STATUS_STATES: Record<TaskStatus, readonly RunState[]> = {
  running: ['QUEUED', 'INPROGRESS'],
  failed: ['FAILED', 'ERROR'],
  blocked: ['BLOCKED'],
  cancelled: ['CANCELLED'],
  complete: ['SUCCEEDED'],
};

/** The ways a run's state changes, each with who makes it. */
export type RunMove =
  /** Within a turn, only forward (the workflow's activities, the reconciler). */
  | 'forward'
  /** A terminal run's next turn, QUEUED (a follow-up, or admission finding one waiting). */
  | 'reopen'
  /** Back to how the previous turn ended: a follow-up that alone reopened the run, taken back undelivered. */
  | 'withdraw'
  /** A call of the agent waits for a person (the step activity, in the transaction that records the approval). */
  | 'block'
  /** The person decided (or the deadline passed): the run works again (the workflow, once admitted anew). */
  | 'unblock';

/**
 * Whether `from` may become `to` by `move`: the one table of run-state changes. Every writer of
 * a run's state (db/run-store.ts, db/followups.ts) asks it or applies its SQL form.
 */
export function isAllowedMove(from: RunState, to: RunState, move: RunMove): boolean {
  switch (move) {
    case 'forward':
      // BLOCKED is entered only by `block`: a call of a working run waits.
      return stateRank(from) < stateRank(to) && to !== 'BLOCKED';
    case 'reopen':
      return isTerminal(from) && to === 'QUEUED';
    case 'withdraw':
      return from === 'QUEUED' && isTerminal(to);
    case 'block':
      return from === 'INPROGRESS' && to === 'BLOCKED';
    case 'unblock':
      return from === 'BLOCKED' && to === 'INPROGRESS';
  }
}

/**
 * Whether the run, as stored, has moved past `turn`: that turn ended (a terminal state) or a
 * follow-up reopened the run in a later one. A step of `turn` then must not run: its workflow
 * took a turn's end recorded by a workflow task that never completed for one still going.
 */
export function turnIsOver(stored: { state: RunState; turn: number }, turn: number): boolean {
  return stored.turn > turn || (stored.turn === turn && isTerminal(stored.state));
}

/** Every `source` the official clients know (`RunSourceType`); all are valid list filters. */
export const RUN_SOURCES = [
  'API',
  'LINEAR',
  'SLACK',
  'LOCAL',
  'SCHEDULED_AGENT',
  'WEB_APP',
  'GITHUB_ACTION',
  'CLOUD_MODE',
  'CLI',
  'JIRA',
  'SELF_IMPROVEMENT',
  'GITHUB_WEBHOOK',
  'GITLAB_WEBHOOK',
  'AUTOFIX',
  'RUN_SCORER',
  'ORCHESTRATION',
] as const;
export type RunSource = (typeof RUN_SOURCES)[number];
