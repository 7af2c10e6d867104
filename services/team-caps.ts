import type { EntityManager } from 'typeorm';
import { countTeamRowsForInsert, type CappedTable } from '../db/team-caps';
import { teamStoredBytes } from '../db/team-storage-reads';
import { ApiError } from '../core/api-error';

const NAMES: Record<CappedTable, { plural: string; variable: string }> = {
  environments: { plural: 'environments', variable: 'TEAM_MAX_ENVIRONMENTS' },
  schedules: { plural: 'schedules', variable: 'TEAM_MAX_SCHEDULES' },
  agent_identities: { plural: 'agents', variable: 'TEAM_MAX_AGENTS' },
  webhooks: { plural: 'webhooks', variable: 'TEAM_MAX_WEBHOOKS' },
  managed_secrets: { plural: 'secrets', variable: 'TEAM_MAX_SECRETS' },
};

/** 409 `conflict` (not retryable) when the team has `cap` of these already; 0: no cap. */
export async function assertTeamHasRoom(
  tx: EntityManager,
  table: CappedTable,
  teamId: string,
  cap: number,
): Promise<void> {
  if (cap <= 0) return;
  if ((await countTeamRowsForInsert(tx, table, teamId)) < cap) return;
  const { plural, variable } = NAMES[table];
  throw new ApiError(
    'conflict',
    `Your team has ${cap} ${plural}, the most it may have (${variable}); delete one before adding another.`,
    { retryable: false },
  );
}

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

/**
 * The bytes a team's runs keep, when they have reached `cap` (TEAM_MAX_STORED_BYTES; 0: no
 * cap); undefined while there is room.
 */
export async function teamStorageFull(
  manager: EntityManager,
  teamId: string,
  cap: number,
): Promise<number | undefined> {
  if (cap <= 0) return undefined;
  const stored = await teamStoredBytes(manager, teamId);
  return stored >= cap ? stored : undefined;
}

/** 400 `budget_exceeded` when the team's runs keep TEAM_MAX_STORED_BYTES or more. */
export async function assertTeamStorageLeft(manager: EntityManager, teamId: string, cap: number): Promise<void> {
  const stored = await teamStorageFull(manager, teamId, cap);
  if (stored === undefined) return;
  throw new ApiError(
    'budget_exceeded',
    `Your team's runs keep ${gib(stored)} of files and checkpoints, the most it may keep (TEAM_MAX_STORED_BYTES=${cap}, ${gib(cap)}): no new run or fork until runs are deleted or the operator raises the cap.`,
  );
}
