import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { TerminalRunState } from '../../core/run-state';
import type { RunStatusMessage } from '../../core/run-types';
import { RunFailureType, type UserFailureDetails } from '../run-contract';

/** How a turn that failed ends: FAILED for what the user can fix, ERROR for what kept failing. */
export function classifyFailure(err: unknown): {
  to: TerminalRunState;
  statusMessage: RunStatusMessage;
  /** The failure gives the run's files up (its disk limit). */
  releaseWorkspace?: boolean;
} {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === RunFailureType.USER_FAILURE) {
    const details = (cause.details?.[0] ?? {}) as Partial<UserFailureDetails>;
    return {
      to: 'FAILED',
      statusMessage: { message: cause.message, error_code: details.errorCode ?? 'invalid_request', retryable: false },
      ...(details.releaseWorkspace ? { releaseWorkspace: true } : {}),
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

/** The API's transaction that started this workflow rolled back: there is no run. */
export function isRunNotFound(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === RunFailureType.RUN_NOT_FOUND
  );
}
