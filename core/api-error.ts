import { ERROR_CODES, type ErrorCode } from './error-codes';

/** Thrown by handlers; the error middleware turns it into the problem document. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    options: { status?: number; headers?: Record<string, string>; retryable?: boolean } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = options.status ?? ERROR_CODES[code].status;
    this.headers = options.headers ?? {};
    this.retryable = options.retryable ?? ERROR_CODES[code].retryable;
  }
  readonly headers: Record<string, string>;
  /** Whether the same request may succeed later; by default what the code says. */
  readonly retryable: boolean;
}

export const invalid = (detail: string) => new ApiError('invalid_request', detail);
export const notFound = (detail: string) => new ApiError('resource_not_found', detail);
