import type { Context, Middleware } from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { rateLimitRejections } from '../../core/metrics';
import { ApiError } from '../../core/api-error';

/**
 * Requests without a valid API key, counted per client address in this process (a fixed window
 * of a minute; rate-limiter-flexible's memory store): the open pages and failed authentications.
 * Kept in memory on purpose: counting them in PostgreSQL would cost the database a write for
 * every request an attacker sends. Each API instance allows its own share.
 */
export interface ClientAddressLimit {
  /** Counts one request of `address`; throws 429 `rate_limited` past the limit. */
  take(address: string): Promise<void>;
  /** Whether `address` is past the limit already (counts nothing). */
  exhausted(address: string): Promise<boolean>;
}

export function createClientAddressLimit(
  perMinute: number,
  what: { requests: string; variable: string } = {
    requests: 'requests without a valid API key',
    variable: 'RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE',
  },
): ClientAddressLimit | undefined {
  if (perMinute <= 0) return undefined;
  const limiter = new RateLimiterMemory({ points: perMinute, duration: 60 });
  const refuse = (res: RateLimiterRes) => {
    rateLimitRejections.inc({ limit: 'client_address' });
    const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
    return new ApiError(
      'rate_limited',
      `Too many ${what.requests} from your address (${what.variable} is ${perMinute}); retry in ${retryAfter} seconds.`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  };
  return {
    async take(address) {
      try {
        await limiter.consume(address);
      } catch (err) {
        if (err instanceof RateLimiterRes) throw refuse(err);
        throw err;
      }
    },
    async exhausted(address) {
      const res = await limiter.get(address);
      return res !== null && res.remainingPoints <= 0;
    },
  };
}

/** Paths a load balancer or Prometheus polls: never limited by address. */
const UNLIMITED = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Counts every request to the routes that need no key: those outside `apiPrefix`, and those under
 * one of `openApiPrefixes` (the API's keyed routes count failed authentications instead).
 */
export function limitOpenRoutes(
  limit: ClientAddressLimit | undefined,
  apiPrefix: string,
  openApiPrefixes: readonly string[] = [],
): Middleware {
  const open = (path: string) =>
    !path.startsWith(`${apiPrefix}/`) ||
    openApiPrefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  return async (ctx: Context, next) => {
    // In lower case: the routers match a path whatever its case, so the count must too.
    const path = ctx.path.toLowerCase();
    if (limit && !UNLIMITED.has(path) && open(path)) await limit.take(ctx.ip);
    await next();
  };
}
