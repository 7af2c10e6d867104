import Router from '@koa/router';
import type { Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { pingDatabase } from '../../db/probe-reads';

export interface HealthDeps {
  dataSource: DataSource;
  temporalConnection: Connection;
  namespace: string;
  /** Present where this process also runs the worker (the all-in-one `npm start`). */
  isWorkerRunning?: () => boolean;
  /** How that worker limits each run's processes together (or that it does not). */
  workerRunLimits?: () => string;
  /** The harnesses that worker offers, with their CLI versions. */
  workerHarnesses?: () => Record<string, string>;
}

/** 'ok' or 'unavailable', within a few seconds; what went wrong inside stays out of the answer. */
async function check(fn: () => Promise<unknown>): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

const CHECK_TIMEOUT_MS = 3000;

/** `/healthz`: the process answers. `/readyz`: PostgreSQL and Temporal answer (and the worker polls). */
export function createHealthRouter(deps: HealthDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const checks: Record<string, string> = {
      database: await check(() => pingDatabase(deps.dataSource)),
      temporal: await check(() =>
        deps.temporalConnection.workflowService.describeNamespace({ namespace: deps.namespace }),
      ),
    };
    if (deps.isWorkerRunning) checks.worker = deps.isWorkerRunning() ? 'ok' : 'unavailable';
    const ready = Object.values(checks).every((c) => c === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'ready' : 'not ready',
      checks,
      ...(deps.workerRunLimits ? { run_limits: deps.workerRunLimits() } : {}),
      ...(deps.workerHarnesses ? { harnesses: deps.workerHarnesses() } : {}),
    };
  });
  return router;
}
