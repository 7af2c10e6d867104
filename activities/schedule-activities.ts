import { ApplicationFailure, Context } from '@temporalio/activity';
import { ScheduleNotFoundError } from '@temporalio/client';
import { ApiError } from '../core/api-error';
import { pausedForRestore, RESTORE_MODE_REFUSAL } from '../services/restore/restore-mode';
import { createRunService } from '../services/runs/run-service';
import {
  runScheduleRef,
  schedulePrincipal,
  scheduledRunEvent,
  scheduledRunRequest,
} from '../services/schedules/schedule-service';
import { createAuditLog } from '../services/audit/audit-log';
import { findSchedule } from '../db/schedule-reads';
import { recordSpawnOutcome } from '../db/schedules';
import {
  SCHEDULED_RUN_MAX_ATTEMPTS,
  ScheduleFailureType,
  temporalScheduleId,
  type CreateScheduledRunInput,
  type ScheduledRunResult,
} from '../workflows/schedule-contract';
import type { ActivityDeps } from './deps';

/** The activity of a schedule's firing: it creates the run through the same path as `POST /agent/runs`. */
export function createScheduleActivities({
  dataSource,
  config,
  logger,
  temporal,
  secretsKeyring,
  blobs,
  objectStore,
}: Pick<ActivityDeps, 'dataSource' | 'config' | 'logger' | 'temporal' | 'secretsKeyring' | 'blobs' | 'objectStore'>) {
  const runService = createRunService({ config, dataSource, temporal, secretsKeyring, blobs, objectStore, logger });
  const audit = createAuditLog({ dataSource, logger });

  return {
    /**
     * Creates the run of one firing as the schedule's creator, with `source` SCHEDULED_AGENT and
     * the schedule on the run. The firing's id is the idempotency key, so a retry after a
     * created run makes no second one. A refused run, or the last failed attempt, is recorded
     * on the schedule as `last_spawn_error`; a created one clears it.
     */
    async createScheduledRun({ scheduleId, firingId }: CreateScheduledRunInput): Promise<ScheduledRunResult> {
      // A restored database may lack a schedule made after its backup: its Temporal Schedule stays.
      if (pausedForRestore(config.restoreMode, logger, 'schedule_firing')) {
        const message = `The firing of ${firingTime(firingId)} created no run: ${RESTORE_MODE_REFUSAL}`;
        await recordSpawnOutcome(dataSource.manager, scheduleId, message);
        return { skipped: message };
      }
      const schedule = await findSchedule(dataSource.manager, scheduleId);
      if (!schedule) {
        // Its row is gone (deleted, or its creation withdrawn after Temporal took it): nothing may fire again.
        await temporal.schedule
          .getHandle(temporalScheduleId(scheduleId))
          .delete()
          .catch((err: unknown) => {
            if (!(err instanceof ScheduleNotFoundError)) throw err;
          });
        return { skipped: `schedule ${scheduleId} no longer exists; its Temporal Schedule was deleted` };
      }
      try {
        const created = await runService.createRun(
          schedulePrincipal(schedule),
          scheduledRunRequest(schedule, secretsKeyring),
          `schedule-firing:${firingId}`,
          { source: 'SCHEDULED_AGENT', schedule: runScheduleRef(schedule) },
        );
        await recordSpawnOutcome(dataSource.manager, scheduleId, null);
        if (!created.replayed) await audit.record(scheduledRunEvent(schedule, 'success', created.runId));
        return { runId: created.runId };
      } catch (err) {
        const refused = err instanceof ApiError && err.status < 500;
        const { attempt } = Context.current().info;
        if (refused || attempt >= SCHEDULED_RUN_MAX_ATTEMPTS) {
          const reason = refused
            ? err.detail
            : `the service could not create it after ${attempt} attempts (database or Temporal unavailable)`;
          const message = `The firing of ${firingTime(firingId)} created no run: ${reason}`;
          await recordSpawnOutcome(dataSource.manager, scheduleId, message).catch((recordErr: unknown) =>
            logger.warn('could not record a schedule spawn error', { schedule_id: scheduleId, error: recordErr }),
          );
          await audit.record(scheduledRunEvent(schedule, 'failed', undefined, refused ? err.code : 'unavailable'));
          if (refused) throw ApplicationFailure.nonRetryable(message, ScheduleFailureType.SPAWN_REFUSED);
        }
        throw err;
      }
    },
  };
}

/** The time Temporal appends to a firing's workflow id (`…-2026-01-02T03:04:05Z`). */
function firingTime(firingId: string): string {
  return /(\d{4}-\d{2}-\d{2}T[\d:.]+Z)$/.exec(firingId)?.[1] ?? firingId;
}
