import { setCurrentDetails } from '@temporalio/workflow';
import type { RunState } from '../../core/run-state';

/**
 * What the Temporal UI shows as the run workflow's current details (the SDK's user metadata,
 * answered to the UI's metadata query): the run's state as the API says it, so that a run that
 * has ended but waits out its idle window reads as such instead of as a bare RUNNING. It lives
 * in the workflow's memory only and adds no command, so it needs no patch.
 */
export function showRunState(state: RunState | 'STARTING'): void {
  setCurrentDetails(state);
}

/** The idle window after a turn: the state it ended in, and until when a follow-up continues the run. */
export function showWaitingForFollowups(state: RunState | 'STARTING', idleTimeoutMinutes: number): void {
  const until = new Date(Date.now() + idleTimeoutMinutes * 60_000).toISOString();
  setCurrentDetails(`${state}, waiting for follow-ups until ${until}`);
}
