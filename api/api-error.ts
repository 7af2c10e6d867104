import { ERROR_CODES, type ErrorCode } from '../core/error-codes';

/** Thrown by handlers; the error middleware turns it into the problem document. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    options: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = options.status ?? ERROR_CODES[code].status;
    this.headers = options.headers ?? {};
  }
  readonly headers: Record<string, string>;
}

export const invalid = (detail: string) => new ApiError('invalid_request', detail);
export const notFound = (detail: string) => new ApiError('resource_not_found', detail);
