import type { Context, Middleware } from 'koa';
import { ERROR_CODES, type ErrorCode } from '../../core/error-codes';
import type { Logger } from '../../core/logger';
import { ApiError } from '../../core/api-error';
import { routeTemplate } from './request-log';
import { DatabaseUnreachableError, isDependencyDown } from '../../core/dependency-errors';

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  error: string;
  error_code: ErrorCode;
  retryable: boolean;
  trace_id: string;
}

export function problemDocument(
  errorReferenceBaseUrl: string,
  error: ApiError,
  instance: string,
  traceId: string,
): ProblemDocument {
  const { title } = ERROR_CODES[error.code];
  return {
    type: `${errorReferenceBaseUrl}/${error.code}`,
    title,
    status: error.status,
    detail: error.detail,
    instance,
    error: `${title}: ${error.detail}`,
    error_code: error.code,
    retryable: error.retryable,
    trace_id: traceId,
  };
}

/** The one place that turns thrown errors into RFC 9457 problem documents. */
export function errorHandler(options: { errorReferenceBaseUrl: string; logger: Logger }): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError('resource_not_found', `No route ${ctx.method} ${ctx.path}.`);
      }
      // Set by the routers' allowedMethods together with `Allow`, which stays on the response.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) {
        throw toApiError({ status: ctx.status }, ctx.method, ctx.path, options.logger, logFieldsOf(ctx));
      }
    } catch (err) {
      const requestId = String(ctx.state.requestId ?? '');
      const apiError = toApiError(err, ctx.method, ctx.path, options.logger, logFieldsOf(ctx));
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
      // Tells the official clients whether retrying can help, instead of guessing from the status.
      ctx.set('x-should-retry', String(apiError.retryable));
      ctx.body = problemDocument(options.errorReferenceBaseUrl, apiError, ctx.path, requestId);
      ctx.type = 'application/problem+json; charset=utf-8';
    }
  };
}

/** What a log line may say of the request: never its path (ids in it can be capabilities) or query. */
function logFieldsOf(ctx: Context): { request_id: string; method: string; route: string | null } {
  return { request_id: String(ctx.state.requestId ?? ''), method: ctx.method, route: routeTemplate(ctx) };
}

function toApiError(
  err: unknown,
  method: string,
  path: string,
  logger: Logger,
  request: ReturnType<typeof logFieldsOf>,
): ApiError {
  if (err instanceof ApiError) return err;
  const status = (err as { status?: number }).status;
  // The routers answer 501 for a method they do not know at all (TRACE, CONNECT, ...); for the
  // resource it is as unsupported as any other method it lacks (RFC 9110: 405 with `Allow`).
  if (status === 405 || status === 501) {
    return new ApiError('operation_not_supported', `${method} is not supported on ${path}.`, { status: 405 });
  }
  if (err instanceof DatabaseUnreachableError) {
    // Logged once by the gate when PostgreSQL turned unreachable, not once per refused request.
    return new ApiError('resource_unavailable', 'PostgreSQL is unreachable; retry later.', {
      headers: { 'Retry-After': '5' },
    });
  }
  if (isDependencyDown(err)) {
    logger.warn('dependency unavailable', { ...request, error: err });
    return new ApiError(
      'resource_unavailable',
      'A dependency of the service (database or Temporal) is unavailable; retry later.',
      { headers: { 'Retry-After': '5' } },
    );
  }
  logger.error('unhandled error', { ...request, error: err });
  return new ApiError(
    'internal_error',
    `An unexpected error occurred; quote request id ${request.request_id} when reporting it.`,
  );
}
