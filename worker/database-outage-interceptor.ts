import type { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { pingDatabase } from '../db/probe-reads';
import { isCausedByOutage } from '../core/dependency-errors';
import type { Logger } from '../core/logger';
import { runIdOfWorkflowId } from '../workflows/run-contract';

const PROBE_INTERVAL_MS = 1000;

/**
 * An activity that fails because PostgreSQL cannot be reached waits, heartbeating, until it
 * answers again and then runs again in the same attempt: an outage is not the activity's fault,
 * so it must not use up the retries meant for real failures (a model that keeps failing, a
 * workspace that cannot be built). Activities are written to be run again (that is what a retry
 * does), so running one again here is as safe as Temporal's own retry. Local activities are left
 * to their own unlimited retries.
 */
export function waitOutDatabaseOutages(dataSource: DataSource, logger: Logger): ActivityInterceptorsFactory {
  const databaseAnswers = () =>
    pingDatabase(dataSource).then(
      () => true,
      () => false,
    );
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        for (;;) {
          try {
            return await next(input);
          } catch (err) {
            if (ctx.info.isLocal || !isCausedByOutage(err)) throw err;
            // The probe itself can take seconds (a full pool, a query timeout): beat meanwhile.
            const beat = setInterval(() => ctx.heartbeat(), 1000);
            try {
              if (await databaseAnswers()) throw err;
            } finally {
              clearInterval(beat);
            }
            const since = Date.now();
            const about = { activity: ctx.info.activityType, ...runOf(ctx.info.workflowExecution?.workflowId) };
            logger.warn('PostgreSQL is unreachable; the activity waits for it', about);
            await waitFor(ctx, databaseAnswers);
            logger.info('PostgreSQL is back; the activity runs again', { ...about, waited_ms: Date.now() - since });
          }
        }
      },
    },
  });
}

/** Heartbeats while it waits, so the run's worker is seen alive and a cancel still lands. */
async function waitFor(ctx: Context, answers: () => Promise<boolean>): Promise<void> {
  const beat = setInterval(() => ctx.heartbeat(), 1000);
  try {
    do {
      await ctx.sleep(PROBE_INTERVAL_MS); // throws when the activity is cancelled
    } while (!(await answers()));
  } finally {
    clearInterval(beat);
  }
}

/** `{ run_id }` when the activity is a run's, else `{ workflow_id }`. */
function runOf(workflowId: string | undefined): Record<string, string> {
  if (workflowId === undefined) return {};
  const runId = runIdOfWorkflowId(workflowId);
  return runId ? { run_id: runId } : { workflow_id: workflowId };
}
