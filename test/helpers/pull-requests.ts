import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { parseRepositoryUrl, type ForgeKind } from '../../core/git-forges';
import type { PullRequestStatus } from '../../core/pull-requests';
import { recordPullRequestStatus } from '../../db/pull-request-events';

/**
 * What the delivery (another branch's db/pull-requests.ts) writes for a run's pull request: its
 * row, as when the branch was pushed, then what the forge answered when it opened the pull
 * request, through the one function the delivery calls for it. Answers the row's artifact uid.
 */
export async function recordDeliveredPullRequest(
  dataSource: DataSource,
  pr: {
    runId: string;
    repositoryUrl: string;
    forge: ForgeKind;
    branch: string;
    base: string;
    number: number;
    url: string;
    status: PullRequestStatus;
  },
): Promise<string> {
  const at = parseRepositoryUrl(pr.repositoryUrl)!;
  const artifactUid = randomUUID();
  await dataSource.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO run_pull_requests (run_id, repository, team_id, artifact_uid, forge, host, owner, name, branch, base)
       SELECT run_id, $2, team_id, $3, $4, $5, $6, $7, $8, $9 FROM runs WHERE run_id = $1`,
      [pr.runId, pr.repositoryUrl, artifactUid, pr.forge, at.host, at.owner, at.name, pr.branch, pr.base],
    );
    await recordPullRequestStatus(tx, {
      runId: pr.runId,
      repository: pr.repositoryUrl,
      number: pr.number,
      url: pr.url,
      status: pr.status,
      source: 'delivery',
    });
  });
  return artifactUid;
}
