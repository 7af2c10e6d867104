import type { EntityManager } from 'typeorm';
import type { RecordedPullRequestChange, WebhookDeliveryStatus } from '../core/webhooks';
import { toArtifact, type RunArtifact } from './artifact-reads';
import { toPlan } from './plan-reads';
import { toPullRequest } from './pull-request-reads';
import type { Run } from './rows/run';
import { rowToRun } from './run-reads';

/** The channel the delivery trigger (migration 1763880000000) notifies at each commit that recorded deliveries. */
export const WEBHOOK_DELIVERIES_CHANNEL = 'webhook_deliveries';

/** How long a claim to start a delivery's workflow holds before another worker may take it over. */
const CLAIM_SECONDS = 30;

/** Entries of a delivery's attempt log kept (the newest). */
const ATTEMPT_LOG_LIMIT = 50;

/**
 * Claims up to `limit` deliveries of the queue's webhooks whose workflow has not been started,
 * oldest first; a claim lapses after 30 s, so a worker that dies holding it delays them only that
 * long. Rows another transaction is claiming are skipped, not waited for.
 */
export async function claimUnstartedDeliveries(
  manager: EntityManager,
  taskQueue: string,
  limit: number,
): Promise<string[]> {
  const rows = (await manager.query(
    `UPDATE webhook_deliveries SET start_claimed_until = clock_timestamp() + make_interval(secs => $3)
      WHERE id IN (
        SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE d.workflow_started_at IS NULL AND w.task_queue = $1
           AND (d.start_claimed_until IS NULL OR d.start_claimed_until < clock_timestamp())
         ORDER BY d.created_at LIMIT $2
           FOR UPDATE OF d SKIP LOCKED)
      RETURNING id`,
    [taskQueue, limit, CLAIM_SECONDS],
  )) as [{ id: string }[], number];
  return rows[0].map((r) => r.id);
}

/** Records that the deliveries' workflows exist (started now, or found started). */
export async function markDeliveryWorkflowsStarted(manager: EntityManager, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await manager.query(
    `UPDATE webhook_deliveries SET workflow_started_at = clock_timestamp(), start_claimed_until = NULL
      WHERE id = ANY($1::uuid[])`,
    [ids],
  );
}

/** Lets go of claims whose workflows could not be started, for the next notification or sweep. */
export async function releaseDeliveryClaims(manager: EntityManager, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await manager.query(`UPDATE webhook_deliveries SET start_claimed_until = NULL WHERE id = ANY($1::uuid[])`, [ids]);
}

/** What one attempt of a delivery sends: where, signed with what, and the event as it was recorded. */
export interface DeliveryToSend {
  id: string;
  status: WebhookDeliveryStatus;
  url: string;
  encryptedSecret: string;
  eventId: string;
  eventType: string;
  occurredAt: Date;
  /** The run's row at the state change. */
  run: Run;
  /** The run's artifacts at the state change (its plans without their markdown, its pull requests). */
  artifacts: RunArtifact[];
  /** A `run.pull_request_changed` event's change; null for a state change. */
  pullRequestChange: RecordedPullRequestChange | null;
}

/** The delivery with its webhook and event, or null when it is gone (its webhook was deleted). */
export async function loadDeliveryToSend(manager: EntityManager, deliveryId: string): Promise<DeliveryToSend | null> {
  const [row] = (await manager.query(
    `SELECT d.id, d.status, w.url, w.secret, e.id::text AS event_id, e.event_type, e.occurred_at, e.pull_request_change
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN webhook_events e ON e.id = d.event_id
      WHERE d.id = $1`,
    [deliveryId],
  )) as Record<string, unknown>[];
  if (!row) return null;
  const eventId = row.event_id as string;
  // Back to typed columns, exactly as a SELECT of the tables would return them.
  const [runRow] = (await manager.query(
    `SELECT r.* FROM webhook_events e CROSS JOIN LATERAL jsonb_populate_record(NULL::runs, e.run) r WHERE e.id = $1`,
    [eventId],
  )) as Record<string, unknown>[];
  const artifactRows = (await manager.query(
    `SELECT a.* FROM webhook_events e CROSS JOIN LATERAL jsonb_populate_recordset(NULL::artifacts, e.artifacts) a
      WHERE e.id = $1 ORDER BY a.created_at, a.artifact_uid`,
    [eventId],
  )) as Record<string, unknown>[];
  const planRows = (await manager.query(
    `SELECT p.* FROM webhook_events e CROSS JOIN LATERAL jsonb_populate_recordset(NULL::run_plans, e.plans) p
      WHERE e.id = $1 ORDER BY p.version`,
    [eventId],
  )) as Record<string, unknown>[];
  const pullRequestRows = (await manager.query(
    `SELECT q.* FROM webhook_events e CROSS JOIN LATERAL jsonb_populate_recordset(NULL::run_pull_requests, e.pull_requests) q
      WHERE e.id = $1 ORDER BY q.created_at, q.repository`,
    [eventId],
  )) as Record<string, unknown>[];
  const artifacts: RunArtifact[] = [
    ...artifactRows.map(toArtifact),
    ...planRows.map(toPlan),
    ...pullRequestRows.map(toPullRequest),
  ];
  // A stable sort: files keep their order among themselves, and so do plans and pull requests.
  artifacts.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  return {
    id: row.id as string,
    status: row.status as WebhookDeliveryStatus,
    url: row.url as string,
    encryptedSecret: row.secret as string,
    eventId,
    eventType: row.event_type as string,
    occurredAt: row.occurred_at as Date,
    run: rowToRun(runRow!),
    artifacts,
    pullRequestChange: (row.pull_request_change ?? null) as RecordedPullRequestChange | null,
  };
}

export interface AttemptOutcome {
  /** When the attempt started. */
  at: Date;
  durationMs: number;
  ok: boolean;
  httpStatus?: number;
  error?: string;
}

/**
 * Adds an attempt to the delivery's log: a success finishes it, a failure leaves it `failed` (to
 * be tried again) unless it already finished. False when the delivery is gone.
 */
export async function recordDeliveryAttempt(
  manager: EntityManager,
  deliveryId: string,
  outcome: AttemptOutcome,
): Promise<boolean> {
  const [, count] = (await manager.query(
    `UPDATE webhook_deliveries SET
            status = CASE WHEN $2::boolean THEN 'succeeded'
                          WHEN status IN ('succeeded', 'given_up') THEN status ELSE 'failed' END,
            finished_at = CASE WHEN $2::boolean THEN COALESCE(finished_at, clock_timestamp()) ELSE finished_at END,
            attempts = attempts + 1,
            last_http_status = $3::int,
            last_error = $4::text,
            last_attempt_at = $5::text::timestamptz,
            attempt_log = (CASE WHEN jsonb_array_length(attempt_log) >= ${ATTEMPT_LOG_LIMIT}
                                THEN attempt_log - 0 ELSE attempt_log END)
                          || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                               'attempt', attempts + 1, 'at', $5::text, 'duration_ms', $6::int,
                               'http_status', $3::int, 'error', $4::text)))
      WHERE id = $1`,
    [
      deliveryId,
      outcome.ok,
      outcome.httpStatus ?? null,
      outcome.error ?? null,
      outcome.at.toISOString(),
      Math.round(outcome.durationMs),
    ],
  )) as [unknown[], number];
  return count > 0;
}

/** Records that a delivery will not be tried again (its retry window ran out). */
export async function markDeliveryGivenUp(
  manager: EntityManager,
  deliveryId: string,
  reason: string,
): Promise<boolean> {
  const [, count] = (await manager.query(
    `UPDATE webhook_deliveries SET status = 'given_up', finished_at = clock_timestamp(),
            last_error = COALESCE(last_error, $2)
      WHERE id = $1 AND status IN ('pending', 'failed')`,
    [deliveryId, reason],
  )) as [unknown, number];
  return count > 0;
}

/**
 * Removes deliveries that finished more than `retentionDays` ago, and events left without
 * deliveries for as long; at most `limit` of each per call. Returns how many deliveries went.
 */
export async function pruneDeliveryLog(manager: EntityManager, retentionDays: number, limit: number): Promise<number> {
  const [, deleted] = (await manager.query(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE finished_at < clock_timestamp() - make_interval(days => $1) LIMIT $2)`,
    [retentionDays, limit],
  )) as [unknown[], number];
  await manager.query(
    `DELETE FROM webhook_events WHERE id IN (
       SELECT e.id FROM webhook_events e
        WHERE e.occurred_at < clock_timestamp() - make_interval(days => $1)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        LIMIT $2)`,
    [retentionDays, limit],
  );
  return deleted;
}
