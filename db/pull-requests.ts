import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { PullRequestStatus } from '../core/pull-requests';
import { recordPullRequestStatus } from './pull-request-events';
import type { PullRequestArtifact } from './pull-request-reads';

/** The row of a run's pull request for one repository, as delivery needs it. */
export interface DeliveryRow {
  branch: string;
  base: string;
  /** The last commit the worker pushed: the next push is leased on it. */
  headSha: string | null;
  number: number | null;
}

/** What a delivery names its row by: the artifact's identity, before the forge has a pull request. */
export type DeliveryTarget = Pick<
  PullRequestArtifact,
  'runId' | 'teamId' | 'repository' | 'forge' | 'host' | 'owner' | 'name' | 'branch' | 'base'
>;

/**
 * The run's row for the repository, made on its first delivery (a fresh `artifact_uid`, kept
 * ever after); later deliveries keep its branch and base, whatever the settings say now.
 */
export async function claimPullRequestRow(manager: EntityManager, target: DeliveryTarget): Promise<DeliveryRow> {
  const rows = (await manager.query(
    `INSERT INTO run_pull_requests (run_id, repository, team_id, artifact_uid, forge, host, owner, name, branch, base)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (run_id, repository) DO UPDATE SET updated_at = run_pull_requests.updated_at
     RETURNING branch, base, head_sha, number`,
    [
      target.runId,
      target.repository,
      target.teamId,
      randomUUID(),
      target.forge,
      target.host,
      target.owner,
      target.name,
      target.branch,
      target.base,
    ],
  )) as { branch: string; base: string; head_sha: string | null; number: number | null }[];
  const row = rows[0]!;
  return { branch: row.branch, base: row.base, headSha: row.head_sha, number: row.number };
}

/** The commit now on the run's branch (pushed, or found already there). */
export async function recordPushedHead(
  manager: EntityManager,
  runId: string,
  repository: string,
  headSha: string,
): Promise<void> {
  await manager.query(
    `UPDATE run_pull_requests SET head_sha = $3, updated_at = clock_timestamp() WHERE run_id = $1 AND repository = $2`,
    [runId, repository, headSha],
  );
}

/**
 * The pull request the forge opened or updated, its state as it answered, through the one writer
 * of a pull request's status (its `pull_request` event with it, its url canonical); clears a past
 * failure.
 */
export async function recordPullRequest(
  manager: EntityManager,
  runId: string,
  repository: string,
  pullRequest: { number: number; url: string; status: PullRequestStatus },
): Promise<void> {
  await manager.transaction(async (tx) => {
    await recordPullRequestStatus(tx, { runId, repository, ...pullRequest, source: 'delivery' });
    await tx.query(
      `UPDATE run_pull_requests SET error_code = NULL, error_message = NULL WHERE run_id = $1 AND repository = $2`,
      [runId, repository],
    );
  });
}

/** Why the last delivery to the repository failed. */
export async function recordDeliveryFailure(
  manager: EntityManager,
  runId: string,
  repository: string,
  failure: { errorCode: string; message: string },
): Promise<void> {
  await manager.query(
    `UPDATE run_pull_requests SET error_code = $3, error_message = $4, updated_at = clock_timestamp()
     WHERE run_id = $1 AND repository = $2`,
    [runId, repository, failure.errorCode, failure.message.slice(0, 2000)],
  );
}

/** What delivering a run's pull requests reads of the run. */
export async function loadDeliveryRun(
  manager: EntityManager,
  runId: string,
): Promise<{ teamId: string; title: string; sessionId: string; environmentId: string | undefined } | undefined> {
  const rows = (await manager.query(
    `SELECT team_id, title, session_id, config->>'environment_id' AS environment_id FROM runs WHERE run_id = $1`,
    [runId],
  )) as { team_id: string; title: string; session_id: string; environment_id: string | null }[];
  const row = rows[0];
  return (
    row && {
      teamId: row.team_id,
      title: row.title,
      sessionId: row.session_id,
      environmentId: row.environment_id ?? undefined,
    }
  );
}
