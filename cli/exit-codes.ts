import { TERMINAL_STATES, type TerminalRunState } from '../core/run-state';

/** Exit codes of `agent-runs`; documented in docs/guide/cli.md. */
export const EXIT_CODES = {
  /** The command did what it was asked; with `--wait`/`--follow`, the run SUCCEEDED. */
  ok: 0,
  /** The API refused the request (its problem document's `detail` is printed) or could not be reached. */
  error: 1,
  /** Bad usage: an unknown option, a malformed value, no API key. */
  usage: 2,
  /** With `--wait`/`--follow`: the run ended FAILED. */
  failed: 3,
  /** With `--wait`/`--follow`: the run ended ERROR (a platform or provider failure). */
  errorState: 4,
  /** With `--wait`/`--follow`: the run ended CANCELLED. */
  cancelled: 5,
  /** With `--wait`/`--follow`: the run is BLOCKED, a call of it waiting for a person (`agent-runs approvals`). */
  blocked: 6,
} as const;

/** True for a state a `--wait` or `--follow` stops at: a terminal one, or BLOCKED (waiting for a person, maybe for days). */
export function isStopState(state: unknown): boolean {
  return isTerminalState(state) || state === 'BLOCKED';
}

/** True for a state that ends a turn of a run (the wire carries it as a plain string). */
export function isTerminalState(state: unknown): state is TerminalRunState {
  return (TERMINAL_STATES as readonly unknown[]).includes(state);
}

/** The exit code a `--wait` or `--follow` ends with for a run that stopped in `state`. */
export function exitCodeOfState(state: TerminalRunState | 'BLOCKED'): number {
  switch (state) {
    case 'BLOCKED':
      return EXIT_CODES.blocked;
    case 'SUCCEEDED':
      return EXIT_CODES.ok;
    case 'FAILED':
      return EXIT_CODES.failed;
    case 'ERROR':
      return EXIT_CODES.errorState;
    case 'CANCELLED':
      return EXIT_CODES.cancelled;
  }
}

/** A mistake in how the command was called; exits with `EXIT_CODES.usage`. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
