import type { Context } from '@temporalio/activity';
import { isCausedByOutage } from '../core/dependency-errors';
import type { Logger } from '../core/logger';
import type { DatabaseState } from '../db/database-gate';

const RETRY_INTERVAL_MS = 1000;
/**
 * Tries that fail while the database still answers others (a pool that stayed full, a statement
 * the server cancelled for time): a write that keeps failing so is failing for itself, and the
 * activity's own retries decide.
 */
const MAX_FAILURES_WHILE_REACHABLE = 10;

/**
 * Runs `write` until it goes through. A write that fails for want of PostgreSQL is tried again
 * every second, cancellable, instead of failing the activity: a retried activity redoes
 * everything before the write, and what comes before some writes (a model's reply, paid for and
 * never the same twice) must not be redone. While the database is unreachable it waits as long as
 * the outage lasts; the activity's heartbeat goes on meanwhile.
 */
export async function writeThroughOutage<T>(
  ctx: Context,
  log: Logger,
  what: string,
  databaseState: () => DatabaseState,
  write: () => Promise<T>,
): Promise<T> {
  let since: number | undefined;
  let failuresWhileReachable = 0;
  for (;;) {
    try {
      const done = await write();
      if (since !== undefined) log.info(`PostgreSQL took ${what} after an outage`, { waited_ms: Date.now() - since });
      return done;
    } catch (err) {
      if (!isCausedByOutage(err)) throw err;
      if (databaseState() === 'reachable' && ++failuresWhileReachable >= MAX_FAILURES_WHILE_REACHABLE) throw err;
      if (since === undefined) {
        since = Date.now();
        log.warn(`PostgreSQL did not take ${what}; trying again every second`, { error: String(err) });
      }
      await ctx.sleep(RETRY_INTERVAL_MS); // throws when the activity is cancelled
    }
  }
}
