import type { EntityManager } from 'typeorm';
import type { ForgeKind } from '../core/git-forges';
import type { PullRequestStatus } from '../core/pull-requests';

/** A pull request a run delivered, once the forge opened it (a row of `run_pull_requests` with a `url`): a `PULL_REQUEST` artifact. */
export interface PullRequestArtifact {
  kind: 'PULL_REQUEST';
  artifactUid: string;
  runId: string;
  teamId: string;
  /** The repository as the run names it. */
  repository: string;
  forge: ForgeKind;
  host: string;
  owner: string;
  name: string;
  branch: string;
  base: string;
  number: number | null;
  url: string;
  status: PullRequestStatus;
  statusCheckedAt: Date | null;
  createdAt: Date;
}

export const PULL_REQUEST_COLUMNS = `artifact_uid, run_id, team_id, repository, forge, host, owner, name, branch, base, number, url, status, status_checked_at, created_at`;

/** Maps a raw `run_pull_requests` row (with a url) to the artifact. */
export function toPullRequest(row: Record<string, unknown>): PullRequestArtifact {
  return {
    kind: 'PULL_REQUEST',
    artifactUid: row.artifact_uid as string,
    runId: row.run_id as string,
    teamId: row.team_id as string,
    repository: row.repository as string,
    forge: row.forge as ForgeKind,
    host: row.host as string,
    owner: row.owner as string,
    name: row.name as string,
    branch: row.branch as string,
    base: row.base as string,
    number: row.number === null || row.number === undefined ? null : Number(row.number),
    url: row.url as string,
    status: row.status as PullRequestStatus,
    statusCheckedAt: (row.status_checked_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
  };
}

/** The pull requests (with a url) of each of `runIds`, oldest first. */
export async function pullRequestsOfRuns(manager: EntityManager, runIds: string[]): Promise<PullRequestArtifact[]> {
  if (runIds.length === 0) return [];
  const rows = (await manager.query(
    `SELECT ${PULL_REQUEST_COLUMNS} FROM run_pull_requests
      WHERE run_id = ANY($1::uuid[]) AND url IS NOT NULL ORDER BY created_at, repository`,
    [runIds],
  )) as Record<string, unknown>[];
  return rows.map(toPullRequest);
}

/** A pull request artifact of a team (null for another team's, as for none). */
export async function findPullRequest(
  manager: EntityManager,
  artifactUid: string,
  teamId: string,
): Promise<PullRequestArtifact | null> {
  const rows = (await manager.query(
    `SELECT ${PULL_REQUEST_COLUMNS} FROM run_pull_requests WHERE artifact_uid = $1 AND team_id = $2 AND url IS NOT NULL`,
    [artifactUid, teamId],
  )) as Record<string, unknown>[];
  return rows[0] ? toPullRequest(rows[0]) : null;
}

/** The run of the team whose pull request is at `url` (canonical), the newest; null when none is. */
export async function findRunByPullRequestUrl(
  manager: EntityManager,
  teamId: string,
  url: string,
): Promise<{ runId: string; createdAt: Date } | null> {
  const [row] = (await manager.query(
    `SELECT run_id, created_at FROM run_pull_requests WHERE url = $2 AND team_id = $1 ORDER BY created_at DESC LIMIT 1`,
    [teamId, url],
  )) as { run_id: string; created_at: Date }[];
  return row ? { runId: row.run_id, createdAt: row.created_at } : null;
}

/** A forge's pull request, as its webhooks name it. */
export interface ForgePullRequestKey {
  host: string;
  owner: string;
  name: string;
  number: number;
}

/** The rows of `key` (host, owner and name compared case-insensitively, as the forges do). */
export async function pullRequestRowsOf(
  manager: EntityManager,
  key: ForgePullRequestKey,
): Promise<{ runId: string; repository: string; url: string }[]> {
  const rows = (await manager.query(
    `SELECT run_id, repository, url FROM run_pull_requests
      WHERE host = lower($1) AND lower(owner) = lower($2) AND lower(name) = lower($3) AND number = $4 AND url IS NOT NULL`,
    [key.host, key.owner, key.name, key.number],
  )) as { run_id: string; repository: string; url: string }[];
  return rows.map((r) => ({ runId: r.run_id, repository: r.repository, url: r.url }));
}

/** Up to `limit` open or draft pull requests not checked for `staleSeconds`, on hosts not in `skipHosts`, least recently checked first. */
export async function pullRequestsDueForPoll(
  manager: EntityManager,
  options: { staleSeconds: number; limit: number; skipHosts: string[] },
): Promise<PullRequestArtifact[]> {
  const rows = (await manager.query(
    `SELECT ${PULL_REQUEST_COLUMNS} FROM run_pull_requests
      WHERE url IS NOT NULL AND number IS NOT NULL AND status IN ('open', 'draft', 'unknown')
        AND NOT (host = ANY($3::text[]))
        AND (status_checked_at IS NULL OR status_checked_at < clock_timestamp() - make_interval(secs => $1))
      ORDER BY status_checked_at NULLS FIRST, created_at LIMIT $2`,
    [options.staleSeconds, options.limit, options.skipHosts],
  )) as Record<string, unknown>[];
  return rows.map(toPullRequest);
}
