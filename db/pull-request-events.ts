import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { canonicalReferenceUrl } from '../core/external-references';
import type { PullRequestStatus } from '../core/pull-requests';
import type { PullRequestStatusSource, RunEventPayloads } from '../core/run-events';
import { pullRequestRowsOf, type ForgePullRequestKey } from './pull-request-reads';
import { storableJson } from './storable';

/** What the forge says of a run's pull request. */
export interface PullRequestStatusUpdate {
  runId: string;
  /** The run's repository (the row's key with `runId`). */
  repository: string;
  number: number;
  /** The pull request's page; stored in its canonical form (run-by-external-reference finds it so). */
  url: string;
  status: PullRequestStatus;
  source: PullRequestStatusSource;
}

/**
 * Records what the forge said of a run's pull request, on the row `run_pull_requests` already
 * holds for the run and repository (the delivery wrote it when it pushed the branch): its
 * `number`, `url` and `status`, checked now. When that opened the pull request (no url before,
 * or another number) or changed its status, appends a `pull_request` event to the run's current
 * turn, in the caller's transaction, and answers true; the same status again only notes the check.
 * Call it inside a transaction: the row is locked so that two reports never both append.
 * Throws when the row does not exist.
 */
export async function recordPullRequestStatus(
  manager: EntityManager,
  update: PullRequestStatusUpdate,
): Promise<boolean> {
  const [before] = (await manager.query(
    `SELECT url, number, status FROM run_pull_requests WHERE run_id = $1 AND repository = $2 FOR UPDATE`,
    [update.runId, update.repository],
  )) as { url: string | null; number: number | null; status: PullRequestStatus }[];
  if (!before) throw new Error(`run ${update.runId} has no pull request row for ${update.repository}`);
  const url = canonicalReferenceUrl(update.url);
  await manager.query(
    `UPDATE run_pull_requests SET number = $3, url = $4, status = $5, status_checked_at = clock_timestamp(),
            updated_at = clock_timestamp() WHERE run_id = $1 AND repository = $2`,
    [update.runId, update.repository, update.number, url, update.status],
  );
  const opened = before.url === null || before.number !== update.number;
  if (!opened && before.status === update.status) return false;
  const payload: RunEventPayloads['pull_request'] = {
    repository: update.repository,
    url,
    number: update.number,
    status: update.status,
    ...(opened ? { opened: true } : { previous_status: before.status }),
    source: update.source,
  };
  await manager.query(
    `INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     SELECT run_id, $2, 'pull_request', turn, $3::jsonb FROM runs WHERE run_id = $1`,
    [update.runId, `pull-request-${randomUUID()}`, storableJson(payload)],
  );
  return true;
}

/**
 * Records a forge's word on its pull request `key` for every run's row of it (none: a pull request
 * no run delivered). Answers how many rows changed status. Call it inside a transaction.
 */
export async function recordForgePullRequestStatus(
  manager: EntityManager,
  key: ForgePullRequestKey,
  status: PullRequestStatus,
  source: PullRequestStatusSource,
): Promise<{ matched: number; changed: number }> {
  const rows = await pullRequestRowsOf(manager, key);
  let changed = 0;
  for (const row of rows) {
    if (await recordPullRequestStatus(manager, { ...row, number: key.number, status, source })) changed++;
  }
  return { matched: rows.length, changed };
}

/** Notes that the forge was asked about a run's pull request and did not say (the poll moves on to others). */
export async function notePullRequestChecked(manager: EntityManager, runId: string, repository: string): Promise<void> {
  await manager.query(
    `UPDATE run_pull_requests SET status_checked_at = clock_timestamp() WHERE run_id = $1 AND repository = $2`,
    [runId, repository],
  );
}
