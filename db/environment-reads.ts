import type { DeliverySettings } from '../core/schemas/delivery-schemas';
import type { EntityManager } from 'typeorm';
import type { NetworkPolicy } from '../core/network-policy';
import type { ApprovalPolicy } from '../core/approval-policy';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

export interface EnvironmentConfig {
  name: string;
  description?: string | null;
  docker_image?: string;
  github_repos?: { owner: string; repo: string }[];
  setup_commands?: string[];
  setup_snapshot?: boolean;
  network?: NetworkPolicy;
  /** Calls of the environment's runs that wait for a person, merged with each run's own. */
  approval?: ApprovalPolicy;
  /** What the worker does with a turn's change, under each run's own settings. */
  delivery?: DeliverySettings;
}

export interface Environment {
  uid: string;
  teamId: string;
  config: EnvironmentConfig;
  setupFailed: boolean;
  creator: { uid: string; type: string; display_name: string };
  createdAt: Date;
  lastUpdated: Date;
}

/** Which of these environments still exist (not deleted). */
export async function existingEnvironments(manager: EntityManager, uids: string[]): Promise<Set<string>> {
  const rows = (await manager.query(`SELECT uid FROM environments WHERE uid = ANY($1::text[]) AND deleted_at IS NULL`, [
    uids,
  ])) as { uid: string }[];
  return new Set(rows.map((r) => r.uid));
}

/** `owner/repo, owner/repo` of the environment's repositories ('' for none), for messages. */
export function repositoryNames(env: Environment): string {
  return (env.config.github_repos ?? []).map((r) => `${r.owner}/${r.repo}`).join(', ');
}

export type EnvironmentSort = 'name' | 'last_updated';

export function rowToEnvironment(row: Record<string, unknown>): Environment {
  return {
    uid: row.uid as string,
    teamId: row.team_id as string,
    config: row.config as EnvironmentConfig,
    setupFailed: row.setup_failed as boolean,
    creator: {
      uid: row.creator_uid as string,
      type: row.creator_type as string,
      display_name: row.creator_display_name as string,
    },
    createdAt: row.created_at as Date,
    lastUpdated: row.last_updated as Date,
  };
}

export async function findEnvironment(
  manager: EntityManager,
  uid: string,
  teamId?: string,
): Promise<Environment | null> {
  const rows = (await manager.query(
    `SELECT * FROM environments WHERE uid = $1 AND deleted_at IS NULL AND ($2::uuid IS NULL OR team_id = $2::uuid)`,
    [uid, teamId ?? null],
  )) as Record<string, unknown>[];
  return rows[0] ? rowToEnvironment(rows[0]) : null;
}

/** The sorts of a team's environment list, each answered by an index of its own. */
export const ENVIRONMENT_ORDERS: Record<EnvironmentSort, KeysetOrder> = {
  name: { column: 'name', bytewise: true, type: 'text', key: 'uid', direction: 'ASC' },
  last_updated: { column: 'last_updated', type: 'timestamptz', key: 'uid', direction: 'DESC' },
};

/** A page of the team's environments (`limit` after `after`) in `sortBy` order. */
export async function listEnvironments(
  manager: EntityManager,
  teamId: string,
  sortBy: EnvironmentSort,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<Environment>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    { columns: '*', from: 'environments', where: 'team_id = $1 AND deleted_at IS NULL', params: [teamId] },
    ENVIRONMENT_ORDERS[sortBy],
    page.limit,
    page.after,
  );
  return { rows: rows.map(rowToEnvironment), ...(next ? { next } : {}) };
}

/** The repositories of each of the team's environments `uids` names (missing ones are absent). */
export async function environmentRepositories(
  manager: EntityManager,
  teamId: string,
  uids: string[],
): Promise<Map<string, { owner: string; repo: string }[]>> {
  if (uids.length === 0) return new Map();
  const rows = (await manager.query(
    `SELECT uid, config->'github_repos' AS repos FROM environments
      WHERE team_id = $1 AND uid = ANY($2::text[]) AND deleted_at IS NULL`,
    [teamId, uids],
  )) as { uid: string; repos: { owner: string; repo: string }[] | null }[];
  return new Map(rows.map((r) => [r.uid, (r.repos ?? []).map(({ owner, repo }) => ({ owner, repo }))]));
}
