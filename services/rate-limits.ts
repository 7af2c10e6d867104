import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';
import { rateLimitStore } from '../db/rate-limits';

/** Where a key stands in its window after one more request (or run) was counted. */
export interface LimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
  windowSeconds: number;
}

/** A fixed-window limit shared by every process through PostgreSQL. */
export interface SharedLimit {
  /** Counts one for `key`; null when the count could not be kept (the caller lets the request through). */
  take(key: string): Promise<LimitState | null>;
  /** Gives back one counted by `take` for something that did not happen after all. */
  giveBack(key: string): Promise<void>;
}

/** Logs a limiter's trouble with PostgreSQL at most once a minute, not once per request. */
function troubleLog(logger: Logger, what: string) {
  let lastAt = 0;
  return (error?: unknown) => {
    if (Date.now() - lastAt < 60_000) return;
    lastAt = Date.now();
    logger.warn(
      `${what}: PostgreSQL did not answer the rate limiter; ${error ? 'letting requests through' : 'counting in this process only'}`,
      {
        ...(error ? { error } : {}),
      },
    );
  };
}

function sharedLimit(
  limiter: RateLimiterPostgres,
  points: number,
  windowSeconds: number,
  onError: (error: unknown) => void,
): SharedLimit {
  const state = (allowed: boolean, res: RateLimiterRes): LimitState => ({
    allowed,
    limit: points,
    remaining: Math.max(res.remainingPoints, 0),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    windowSeconds,
  });
  return {
    async take(key) {
      try {
        return state(true, await limiter.consume(key));
      } catch (err) {
        if (err instanceof RateLimiterRes) return state(false, err);
        onError(err);
        return null;
      }
    },
    async giveBack(key) {
      await limiter.reward(key).catch(onError);
    },
  };
}

/**
 * RATE_LIMIT_REQUESTS_PER_MINUTE per API key, counted in PostgreSQL so that every API instance
 * shares it; undefined when off. While PostgreSQL does not answer the limiter, each process
 * counts on its own (rate-limiter-flexible's in-memory insurance limiter) and says so in the log.
 */
export function requestRateLimit(config: Config, dataSource: DataSource, logger: Logger): SharedLimit | undefined {
  const points = config.quotas.requestsPerMinute;
  if (points === 0) return undefined;
  const onInsurance = troubleLog(logger, 'RATE_LIMIT_REQUESTS_PER_MINUTE');
  /** The library's insurance limiter, which also notes that it is in use. */
  class Insurance extends RateLimiterMemory {
    override consume(...args: Parameters<RateLimiterMemory['consume']>) {
      onInsurance();
      return super.consume(...args);
    }
  }
  const limiter = new RateLimiterPostgres({
    ...rateLimitStore(dataSource),
    keyPrefix: 'api-key',
    points,
    duration: 60,
    insuranceLimiter: new Insurance({ keyPrefix: 'api-key', points, duration: 60 }),
  });
  return sharedLimit(limiter, points, 60, troubleLog(logger, 'RATE_LIMIT_REQUESTS_PER_MINUTE'));
}

/**
 * TEAM_MAX_RUNS_PER_HOUR, counted in PostgreSQL; undefined when off. While PostgreSQL does not
 * answer the limiter, runs are let through (creating one needs PostgreSQL anyway) and the log
 * says so.
 */
export function teamRunsPerHourLimit(config: Config, dataSource: DataSource, logger: Logger): SharedLimit | undefined {
  const points = config.quotas.teamMaxRunsPerHour;
  if (points === 0) return undefined;
  const limiter = new RateLimiterPostgres({
    ...rateLimitStore(dataSource),
    keyPrefix: 'team-runs',
    points,
    duration: 3600,
  });
  return sharedLimit(limiter, points, 3600, troubleLog(logger, 'TEAM_MAX_RUNS_PER_HOUR'));
}

/**
 * The RateLimit fields of draft-ietf-httpapi-ratelimit-headers (-09 and later): the policy
 * (`q` requests per `w` seconds) and where the key stands (`r` remaining, `t` seconds to reset).
 */
export function rateLimitHeaders(policy: string, state: LimitState): Record<string, string> {
  return {
    'RateLimit-Policy': `"${policy}";q=${state.limit};w=${state.windowSeconds}`,
    RateLimit: `"${policy}";r=${state.remaining};t=${state.resetSeconds}`,
  };
}
