/** The error taxonomy of the wire contract: one entry per `error_code`. */
export const ERROR_CODES = {
  invalid_request: { status: 400, retryable: false, title: 'Invalid request' },
  authentication_required: { status: 401, retryable: false, title: 'Authentication required' },
  not_authorized: { status: 403, retryable: false, title: 'Not authorized' },
  resource_not_found: { status: 404, retryable: false, title: 'Resource not found' },
  operation_not_supported: { status: 400, retryable: false, title: 'Operation not supported' },
  conflict: { status: 409, retryable: true, title: 'Conflict' },
  rate_limited: { status: 429, retryable: true, title: 'Rate limited' },
  environment_setup_failed: { status: 400, retryable: false, title: 'Environment setup failed' },
  budget_exceeded: { status: 400, retryable: false, title: 'Budget exceeded' },
  feature_not_available: { status: 400, retryable: false, title: 'Feature not available' },
  resource_unavailable: { status: 503, retryable: true, title: 'Resource unavailable' },
  internal_error: { status: 500, retryable: true, title: 'Internal error' },
  // A run's status only: why delivering its pull request (config.delivery.pull_request) failed.
  pull_request_no_credential: { status: 400, retryable: false, title: 'No credential to push' },
  pull_request_owner_not_allowed: { status: 403, retryable: false, title: 'Owner not allowed' },
  pull_request_branch_protected: { status: 400, retryable: false, title: 'Branch protected' },
  pull_request_conflict: { status: 409, retryable: false, title: 'Branch changed by someone else' },
  pull_request_rejected: { status: 400, retryable: false, title: 'Pull request refused' },
  pull_request_forge_unavailable: { status: 503, retryable: true, title: 'Forge unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export const ALL_ERROR_CODES = Object.keys(ERROR_CODES) as ErrorCode[];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}
