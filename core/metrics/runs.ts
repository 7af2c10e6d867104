import { Counter, Histogram } from 'prom-client';
import type { RunState } from '../run-state';
import { LONG_BUCKETS, metricsRegistry } from './registry';

/** Runs: created, ended, and how long their turns queue. */

export const runsCreated = new Counter({
  name: 'agent_runs_runs_created_total',
  help: 'Runs created, by origin (api, factory: a factory agent through the API, schedule, orchestration: dispatched by a run) and harness (oz, claude, codex, gemini).',
  labelNames: ['origin', 'harness'] as const,
  registers: [metricsRegistry],
});

export const runsDeleted = new Counter({
  name: 'agent_runs_runs_deleted_total',
  help: 'Runs deleted with everything they left (descendants included), by reason: api (DELETE /agent/runs/{runId}) or retention (RUN_RETENTION_DAYS).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const runsEnded = new Counter({
  name: 'agent_runs_runs_ended_total',
  help: 'Turns of runs that reached a terminal state, by state and error code (`none` without one).',
  labelNames: ['state', 'error_code'] as const,
  registers: [metricsRegistry],
});

export const runQueueDuration = new Histogram({
  name: 'agent_runs_run_queue_duration_seconds',
  help: 'Time from QUEUED to INPROGRESS of each turn of a run.',
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const approvalDecisionDuration = new Histogram({
  name: 'agent_runs_approval_decision_seconds',
  help: "Time from a call's request for a person's decision to its end, by outcome: approved (a question answered), denied, timed_out, cancelled (the run ended first).",
  labelNames: ['outcome'] as const,
  // A person decides in seconds or in days.
  buckets: [1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86_400, 3 * 86_400, 7 * 86_400],
  registers: [metricsRegistry],
});

/** A call's wait for a person ended as `outcome`, `seconds` after it began. */
export function observeApprovalDecided(outcome: string, seconds: number): void {
  approvalDecisionDuration.observe({ outcome }, Math.max(0, seconds));
}

/** Where the run came from, as `runsCreated` counts it. */
export type RunCreatedOrigin = 'api' | 'factory' | 'schedule' | 'orchestration';

export function observeRunCreated(origin: RunCreatedOrigin, harness = 'oz'): void {
  runsCreated.inc({ origin, harness });
}

/** A turn that reached a terminal state (counted once: only by the write that applied it). */
export function observeRunEnded(state: RunState, errorCode: string | undefined): void {
  runsEnded.inc({ state, error_code: errorCode ?? 'none' });
}

export function observeRunQueued(seconds: number): void {
  runQueueDuration.observe(seconds);
}
