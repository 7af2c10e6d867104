import type { Context } from '@temporalio/activity';
import { isCausedByOutage } from '../core/dependency-errors';
import type { Logger } from '../core/logger';
import type { DatabaseState } from '../db/database-gate';

const RETRY_INTERVAL_MS = 1000;
/**
 * Tries that fail while the gate has not found the database gone (a pool that stayed full, a
 * statement the server cancelled for time; the gate is 'checking' when such a failure is caught):
 * a write that keeps failing so is failing for itself, and the activity's own retries decide.
 */
const MAX_FAILURES_UNTIL_UNREACHABLE = 10;

/**
 * Runs `write` until it goes through. A write that fails for want of PostgreSQL is tried again
 * every second, cancellable, instead of failing the activity: a retried activity redoes
 * everything before the write, and what comes before some writes (a model's reply, paid for and
 * never the same twice) must not be redone. While the database is unreachable it waits as long as
 * the outage lasts (and the count of other failures starts again); the activity's heartbeat goes
 * on meanwhile.
 */
export async function writeThroughOutage<T>(
  ctx: Context,
  log: Logger,
  what: string,
  databaseState: () => DatabaseState,
  write: () => Promise<T>,
): Promise<T> {
  let since: number | undefined;
  let failuresSinceOutage = 0;
  for (;;) {
    try {
      const done = await write();
      if (since !== undefined) log.info(`PostgreSQL took ${what} after an outage`, { waited_ms: Date.now() - since });
      return done;
    } catch (err) {
      if (!isCausedByOutage(err)) throw err;
      if (databaseState() === 'unreachable') failuresSinceOutage = 0;
      else if (++failuresSinceOutage >= MAX_FAILURES_UNTIL_UNREACHABLE) throw err;
      if (since === undefined) {
        since = Date.now();
        log.warn(`PostgreSQL did not take ${what}; trying again every second`, { error: String(err) });
      }
      await ctx.sleep(RETRY_INTERVAL_MS); // throws when the activity is cancelled
    }
  }
}
