import type { EntityManager } from 'typeorm';
import { type ScheduleActor, type Schedule, type ScheduleDefinition, rowToSchedule } from './schedule-reads';

/** A definition's column values, in the order the writes below list them. */
const definitionValues = (d: ScheduleDefinition) => [
  d.name,
  d.cronSchedule,
  d.prompt,
  JSON.stringify(d.agentConfig),
  d.metadata === null ? null : JSON.stringify(d.metadata),
  d.agentUid,
];

const actorValues = (a: ScheduleActor) => [a.uid, a.type, a.display_name];

export async function insertSchedule(
  manager: EntityManager,
  schedule: { scheduleId: string; teamId: string; creator: ScheduleActor } & ScheduleDefinition,
): Promise<Schedule> {
  const rows = (await manager.query(
    `INSERT INTO schedules (schedule_id, team_id, name, cron_schedule, prompt, agent_config, metadata, agent_uid,
                            creator_uid, creator_type, creator_display_name, updater_uid, updater_type, updater_display_name)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $11, $9, $10, $11) RETURNING *`,
    [schedule.scheduleId, schedule.teamId, ...definitionValues(schedule), ...actorValues(schedule.creator)],
  )) as Record<string, unknown>[];
  return rowToSchedule(rows[0]!);
}

/** Replaces a team's schedule's definition; null when it has no such schedule. */
export async function updateScheduleDefinition(
  manager: EntityManager,
  scheduleId: string,
  teamId: string,
  definition: ScheduleDefinition,
  updater: ScheduleActor,
): Promise<Schedule | null> {
  const rows = (await manager.query(
    `UPDATE schedules
        SET name = $3, cron_schedule = $4, prompt = $5, agent_config = $6::jsonb, metadata = $7::jsonb, agent_uid = $8,
            updater_uid = $9, updater_type = $10, updater_display_name = $11, updated_at = clock_timestamp()
      WHERE schedule_id = $1 AND team_id = $2
      RETURNING *`,
    [scheduleId, teamId, ...definitionValues(definition), ...actorValues(updater)],
  )) as [Record<string, unknown>[], number];
  const row = rows[0][0];
  return row ? rowToSchedule(row) : null;
}

/**
 * Puts a schedule back as it was before an update that Temporal did not take, unless someone
 * changed it again since (`updatedAt` of the update being taken back).
 */
export async function restoreSchedule(manager: EntityManager, previous: Schedule, updatedAt: Date): Promise<void> {
  await manager.query(
    `UPDATE schedules
        SET name = $2, cron_schedule = $3, prompt = $4, agent_config = $5::jsonb, metadata = $6::jsonb, agent_uid = $7,
            updater_uid = $8, updater_type = $9, updater_display_name = $10, updated_at = $11
      WHERE schedule_id = $1 AND updated_at = $12`,
    [
      previous.scheduleId,
      ...definitionValues(previous),
      ...actorValues(previous.updater),
      previous.updatedAt,
      updatedAt,
    ],
  );
}

/** Records who changed a schedule's state (paused, resumed) and when. */
export async function touchSchedule(
  manager: EntityManager,
  scheduleId: string,
  updater: ScheduleActor,
): Promise<Schedule | null> {
  const rows = (await manager.query(
    `UPDATE schedules SET updater_uid = $2, updater_type = $3, updater_display_name = $4, updated_at = clock_timestamp()
      WHERE schedule_id = $1 RETURNING *`,
    [scheduleId, updater.uid, updater.type, updater.display_name],
  )) as [Record<string, unknown>[], number];
  const row = rows[0][0];
  return row ? rowToSchedule(row) : null;
}

export async function deleteSchedule(manager: EntityManager, scheduleId: string): Promise<void> {
  await manager.query(`DELETE FROM schedules WHERE schedule_id = $1`, [scheduleId]);
}

/** What the latest firing left: the reason it could not create its run, or null once one could. */
export async function recordSpawnOutcome(
  manager: EntityManager,
  scheduleId: string,
  error: string | null,
): Promise<void> {
  await manager.query(
    `UPDATE schedules SET last_spawn_error = $2 WHERE schedule_id = $1 AND last_spawn_error IS DISTINCT FROM $2`,
    [scheduleId, error],
  );
}
