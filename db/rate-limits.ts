import type { DataSource } from 'typeorm';

/** The counters of rate-limiter-flexible's PostgreSQL store; made by migration 1763900000000. */
export const RATE_LIMITS_TABLE = 'rate_limits';

/**
 * Options of rate-limiter-flexible's `RateLimiterPostgres` for counters on the DataSource's own
 * pg pool (`dataSource.driver.master`). The library reads and writes the table but never creates
 * it: schema changes only come from migrations.
 */
export function rateLimitStore(dataSource: DataSource) {
  return { storeClient: dataSource, storeType: 'typeorm', tableName: RATE_LIMITS_TABLE, tableCreated: true };
}
