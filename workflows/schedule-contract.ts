/**
 * The contract of schedules: the Temporal Schedule of each, the workflow its firings start,
 * that workflow's input and result, and its failure type. The API, the workflow and the
 * activities import this module; nothing refers to these by string literal elsewhere.
 */

export const SCHEDULED_RUN_WORKFLOW_TYPE = 'scheduledRunWorkflow';

/** The Temporal Schedule of a schedule. */
export function temporalScheduleId(scheduleId: string): string {
  return `agent-schedule-${scheduleId}`;
}

/** The id prefix of a schedule's firings (Temporal appends each firing's time). */
export function scheduledRunWorkflowId(scheduleId: string): string {
  return `agent-schedule-${scheduleId}-firing`;
}

/** A firing carries only the schedule's id: what it creates is read from PostgreSQL when it fires. */
export interface ScheduledRunInput {
  scheduleId: string;
}

export interface CreateScheduledRunInput {
  scheduleId: string;
  /** The firing's workflow id: the idempotency key of its run, so a retried activity makes one run. */
  firingId: string;
}

export type ScheduledRunResult = { runId: string } | { skipped: string };

/** Attempts of a firing at creating its run; the last failed one is recorded as `last_spawn_error`. */
export const SCHEDULED_RUN_MAX_ATTEMPTS = 5;

export const ScheduleFailureType = {
  /** The service refused the run (bad configuration, limits, a deleted environment): no retry helps. */
  SPAWN_REFUSED: 'ScheduledRunSpawnRefused',
} as const;
