import type { ApplicationFailure } from '@temporalio/activity';
import { ForgeError, type ForgeFailure } from '../../services/pull-requests/forges/forge-errors';
import { pushFailureOf } from '../../services/pull-requests/forges/push-failures';
import type { UserFailureDetails } from '../../workflows/run-contract';
import { userFailure } from '../user-failure';
import { StagingGitError } from './staging-git';

type DeliveryErrorCode = Extract<UserFailureDetails['errorCode'], `pull_request_${string}`>;

/** A delivery failure the run ends FAILED with: its code and what to do. */
export class DeliveryFailure extends Error {
  override name = 'DeliveryFailure';
  constructor(
    readonly errorCode: DeliveryErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const WHAT_TO_DO: Record<ForgeFailure, [DeliveryErrorCode, string]> = {
  no_credential: ['pull_request_no_credential', 'store a git_credentials secret for the host'],
  unauthorized: [
    'pull_request_rejected',
    "the forge refused the credential: store a valid token in the team's git_credentials secret",
  ],
  forbidden: [
    'pull_request_rejected',
    'the credential may not push or open pull requests here: give its user write access',
  ],
  branch_protected: [
    'pull_request_branch_protected',
    'the branch is protected: name another in config.delivery.pull_request.branch, then send a follow-up',
  ],
  conflict: [
    'pull_request_conflict',
    'the branch holds commits this run did not push, and nothing was pushed over them: delete or rename the branch on the forge (or name another in config.delivery.pull_request.branch), then send a follow-up',
  ],
  not_found: ['pull_request_rejected', 'the forge does not show the repository (or the base branch) to the credential'],
  invalid: ['pull_request_rejected', 'fix what the forge said (the base branch?), then send a follow-up'],
  unavailable: ['pull_request_forge_unavailable', 'the forge did not answer: send a follow-up once it is back'],
};

/** The delivery failure an error of git or of a forge is, naming the repository; undefined for anything else (a bug). */
export function deliveryFailureOf(err: unknown, repository: string): DeliveryFailure | undefined {
  if (err instanceof DeliveryFailure) return err;
  let failure: ForgeFailure;
  if (err instanceof ForgeError) failure = err.failure;
  else if (err instanceof StagingGitError) failure = pushFailureOf(err.stderr);
  else return undefined;
  const [code, todo] = WHAT_TO_DO[failure];
  return new DeliveryFailure(code, `Delivering the pull request for ${repository} failed (${err.message}): ${todo}.`);
}

/** A forge that is down is tried again (the activity's retries, with backoff) until the last attempt. */
export function failureToThrow(failure: DeliveryFailure, lastAttempt: boolean): Error | ApplicationFailure {
  if (failure.errorCode === 'pull_request_forge_unavailable' && !lastAttempt) return failure;
  return userFailure(failure.message, failure.errorCode);
}
