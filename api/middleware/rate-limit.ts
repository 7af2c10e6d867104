import type { Middleware } from 'koa';
import { rateLimitRejections } from '../../core/metrics';
import { ApiError } from '../../core/api-error';
import { rateLimitHeaders, type SharedLimit } from '../../services/rate-limits';
import { principalOf } from './auth';

/** The policy name in the RateLimit fields of every authenticated response. */
export const REQUEST_RATE_POLICY = 'api-key';

/**
 * RATE_LIMIT_REQUESTS_PER_MINUTE per API key (by key id, never the key itself), after
 * authentication: every answer carries the RateLimit fields; one over the limit is 429
 * `rate_limited` with `Retry-After`.
 */
export function rateLimitRequests(limit: SharedLimit | undefined): Middleware {
  return async (ctx, next) => {
    if (!limit) return next();
    const state = await limit.take(principalOf(ctx.state).keyId);
    if (state) ctx.set(rateLimitHeaders(REQUEST_RATE_POLICY, state));
    if (state && !state.allowed) {
      rateLimitRejections.inc({ limit: 'request_rate' });
      throw new ApiError(
        'rate_limited',
        `This API key made more than ${state.limit} requests within a minute (RATE_LIMIT_REQUESTS_PER_MINUTE); retry in ${state.resetSeconds} seconds.`,
        { headers: { 'Retry-After': String(state.resetSeconds) } },
      );
    }
    await next();
  };
}
