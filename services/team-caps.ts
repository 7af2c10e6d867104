import type { EntityManager } from 'typeorm';
import { countTeamRowsForInsert, type CappedTable } from '../db/team-caps';
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
