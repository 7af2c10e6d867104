import type { EntityManager } from 'typeorm';
import type { ResolvedAgentConfig } from '../core/run-types';
import type { PrincipalType } from './rows/principal';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

/** A principal as a schedule names it (who created it, who changed it last). */
export interface ScheduleActor {
  uid: string;
  type: PrincipalType;
  display_name: string;
}

/**
 * A schedule's row: what each firing creates a run from. Its timing and paused state live in
 * its Temporal Schedule, not here. `agentConfig.mcp_servers` credentials are stored encrypted.
 */
export interface Schedule {
  scheduleId: string;
  teamId: string;
  name: string;
  cronSchedule: string;
  prompt: string;
  agentConfig: Partial<ResolvedAgentConfig>;
  metadata: Record<string, string> | null;
  agentUid: string | null;
  creator: ScheduleActor;
  updater: ScheduleActor;
  lastSpawnError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a create or an update sets. */
export type ScheduleDefinition = Pick<
  Schedule,
  'name' | 'cronSchedule' | 'prompt' | 'agentConfig' | 'metadata' | 'agentUid'
>;

export function rowToSchedule(row: Record<string, unknown>): Schedule {
  return {
    scheduleId: row.schedule_id as string,
    teamId: row.team_id as string,
    name: row.name as string,
    cronSchedule: row.cron_schedule as string,
    prompt: row.prompt as string,
    agentConfig: row.agent_config as Schedule['agentConfig'],
    metadata: (row.metadata as Schedule['metadata']) ?? null,
    agentUid: (row.agent_uid as string | null) ?? null,
    creator: {
      uid: row.creator_uid as string,
      type: row.creator_type as PrincipalType,
      display_name: row.creator_display_name as string,
    },
    updater: {
      uid: row.updater_uid as string,
      type: row.updater_type as PrincipalType,
      display_name: row.updater_display_name as string,
    },
    lastSpawnError: (row.last_spawn_error as string | null) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** A team's schedule; without `teamId`, any team's (a firing reads its own schedule). */
export async function findSchedule(
  manager: EntityManager,
  scheduleId: string,
  teamId?: string,
): Promise<Schedule | null> {
  const rows = (await manager.query(
    `SELECT * FROM schedules WHERE schedule_id = $1 AND ($2::uuid IS NULL OR team_id = $2::uuid)`,
    [scheduleId, teamId ?? null],
  )) as Record<string, unknown>[];
  return rows[0] ? rowToSchedule(rows[0]) : null;
}

export const SCHEDULE_ORDER: KeysetOrder = {
  column: 'created_at',
  type: 'timestamptz',
  key: 'schedule_id',
  keyType: 'uuid',
  direction: 'DESC',
};

/** A page of the team's schedules, newest first. */
export async function listSchedules(
  manager: EntityManager,
  teamId: string,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<Schedule>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    { columns: '*', from: 'schedules', where: 'team_id = $1', params: [teamId] },
    SCHEDULE_ORDER,
    page.limit,
    page.after,
  );
  return { rows: rows.map(rowToSchedule), ...(next ? { next } : {}) };
}
