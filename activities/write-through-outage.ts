import type { Context } from '@temporalio/activity';
import { isCausedByOutage } from '../core/dependency-errors';
import type { Logger } from '../core/logger';

const RETRY_INTERVAL_MS = 1000;

/**
 * Runs `write` until it goes through. A write that fails for want of PostgreSQL (an outage, a
 * pool that stayed full past its wait) is tried again every second, cancellable, instead of
 * failing the activity: a retried activity redoes everything before the write, and what comes
 * before some writes (a model's reply, paid for and never the same twice) must not be redone.
 * The activity's own heartbeat goes on meanwhile.
 */
export async function writeThroughOutage<T>(
  ctx: Context,
  log: Logger,
  what: string,
  write: () => Promise<T>,
): Promise<T> {
  let since: number | undefined;
  for (;;) {
    try {
      const done = await write();
      if (since !== undefined) log.info(`PostgreSQL took ${what} after an outage`, { waited_ms: Date.now() - since });
      return done;
    } catch (err) {
      if (!isCausedByOutage(err)) throw err;
      if (since === undefined) {
        since = Date.now();
        log.warn(`PostgreSQL did not take ${what}; trying again every second`, { error: String(err) });
      }
      await ctx.sleep(RETRY_INTERVAL_MS); // throws when the activity is cancelled
    }
  }
}
