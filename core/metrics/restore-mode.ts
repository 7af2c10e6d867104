import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from './registry';

/** Restore mode (RESTORE_MODE): that this process is in it, and the passes it held back. */

/** What restore mode holds back: each acts on PostgreSQL's word alone, which a restored database may not deserve. */
export const PAUSED_IN_RESTORE_MODE = [
  'reconciler',
  'workspace_sweep',
  'run_retention',
  'object_collection',
  'schedule_firing',
] as const;
export type PausedInRestoreMode = (typeof PAUSED_IN_RESTORE_MODE)[number];

export const restoreMode = new Gauge({
  name: 'agent_runs_restore_mode',
  help: 'Whether this process runs with RESTORE_MODE=true (1): sweeps that trust the database are paused and no new run is taken.',
  registers: [metricsRegistry],
});

export const restoreModePasses = new Counter({
  name: 'agent_runs_restore_mode_paused_total',
  help: 'Passes restore mode held back, by what: reconciler, workspace_sweep, run_retention, object_collection, schedule_firing (a firing of a schedule: it creates no run and removes no Temporal Schedule).',
  labelNames: ['pass'] as const,
  registers: [metricsRegistry],
});
