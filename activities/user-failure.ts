import { ApplicationFailure } from '@temporalio/activity';
import { RunFailureType, type UserFailureDetails } from '../workflows/run-contract';

export function userFailure(message: string, errorCode: UserFailureDetails['errorCode']): ApplicationFailure {
  const details: UserFailureDetails = { errorCode };
  return ApplicationFailure.nonRetryable(message, RunFailureType.USER_FAILURE, details);
}

/**
 * The run's files reached its disk limit: the run fails `budget_exceeded` and gives its files up
 * at once (nothing more fits; they would otherwise hold the worker's disk for the idle window).
 */
export function diskLimitFailure(message: string): ApplicationFailure {
  const details: UserFailureDetails = { errorCode: 'budget_exceeded', releaseWorkspace: true };
  return ApplicationFailure.nonRetryable(
    `${message} Its files are removed: a follow-up starts in a fresh workspace.`,
    RunFailureType.USER_FAILURE,
    details,
  );
}
