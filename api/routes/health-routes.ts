import Router from '@koa/router';
import type { Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { invalid } from '../../core/api-error';
import { z } from '../../core/schemas/zod';
import { checkDatabase, checkTemporal, type CheckResult } from '../dependency-checks';
import { rejectQueryParameters, validate } from '../validate';

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
  /** RESTORE_MODE: reads are served, new runs are not. */
  restoreMode?: boolean;
}

/** The dependencies `/readyz` checks, in the order it names them. */
export const READINESS_CHECKS = ['database', 'temporal', 'worker'] as const;
type CheckName = (typeof READINESS_CHECKS)[number];

const readyzQuery = z.object({
  require: z
    .string()
    .transform((s) => s.split(','))
    .pipe(z.array(z.enum(READINESS_CHECKS)))
    .optional(),
});

/**
 * `/healthz`: the process answers. `/readyz`: 200 while PostgreSQL answers, since reads need
 * nothing else; `accepts_runs` says whether Temporal answers too (creates, follow-ups and cancels
 * need it) and restore mode is off; 503 when PostgreSQL does not (nothing can be served), or when a check named in
 * `?require=` fails (a strict probe).
 */
export function createHealthRouter(deps: HealthDeps): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  // `worker` only where this process runs one (the all-in-one `npm start`).
  const offered = READINESS_CHECKS.filter((name) => name !== 'worker' || deps.isWorkerRunning);
  router.get('/readyz', async (ctx) => {
    const required = requiredChecks(ctx.query, offered);
    const [database, temporal] = await Promise.all([
      checkDatabase(deps.dataSource),
      checkTemporal(deps.temporalConnection, deps.namespace),
    ]);
    const checks: Partial<Record<CheckName, CheckResult>> = { database, temporal };
    if (deps.isWorkerRunning) checks.worker = deps.isWorkerRunning() ? 'ok' : 'unavailable';
    const all = Object.values(checks).every((c) => c === 'ok');
    ctx.status = database === 'ok' && required.every((name) => checks[name] === 'ok') ? 200 : 503;
    ctx.body = {
      status: database !== 'ok' ? 'unavailable' : all ? 'ready' : 'degraded',
      accepts_runs: database === 'ok' && temporal === 'ok' && !deps.restoreMode,
      ...(deps.restoreMode ? { restore_mode: true } : {}),
      checks,
      ...(deps.workerRunLimits ? { run_limits: deps.workerRunLimits() } : {}),
      ...(deps.workerHarnesses ? { harnesses: deps.workerHarnesses() } : {}),
    };
  });
  return router;
}

/** The checks `?require=` names (`database` always counts), each one this process runs. */
function requiredChecks(query: Record<string, unknown>, offered: readonly CheckName[]): CheckName[] {
  rejectQueryParameters(query, ['require']);
  const required = validate(readyzQuery, query, 'query').require ?? [];
  const notRun = required.find((name) => !offered.includes(name));
  if (notRun) throw invalid(`\`require\`: this process runs no ${notRun} to check; it checks ${offered.join(', ')}.`);
  return ['database', ...required];
}
