/** Run states the service uses; the one definition shared by API, workflow, activities and DB. */
export const RunState = {
  QUEUED: 'QUEUED',
  INPROGRESS: 'INPROGRESS',
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
 * order; a follow-up after a terminal state starts a new turn at QUEUED.
 */
export function stateRank(state: RunState): number {
  if (state === 'QUEUED') return 0;
  if (state === 'INPROGRESS') return 1;
  return 2;
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
