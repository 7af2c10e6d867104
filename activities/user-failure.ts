import { ApplicationFailure } from '@temporalio/activity';
import { RunFailureType, type UserFailureDetails } from '../workflows/run-contract';

export function userFailure(message: string, errorCode: UserFailureDetails['errorCode']): ApplicationFailure {
  const details: UserFailureDetails = { errorCode };
  return ApplicationFailure.nonRetryable(message, RunFailureType.USER_FAILURE, details);
}
