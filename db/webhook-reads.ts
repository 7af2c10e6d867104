import type { EntityManager } from 'typeorm';
import type { WebhookDeliveryStatus } from '../core/webhooks';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

export interface Webhook {
  id: string;
  teamId: string;
  url: string;
  eventTypes: string[];
  /** The signing secret, encrypted under the secrets key (core/secrets.ts). */
  encryptedSecret: string;
  /** The TEMPORAL_TASK_QUEUE of the service that created it: the workers of that queue deliver its events. */
  taskQueue: string;
  createdAt: Date;
}

export const COLUMNS = `id, team_id, url, event_types, secret, task_queue, created_at`;

export function toWebhook(row: Record<string, unknown>): Webhook {
  return {
    id: row.id as string,
    teamId: row.team_id as string,
    url: row.url as string,
    eventTypes: row.event_types as string[],
    encryptedSecret: row.secret as string,
    taskQueue: row.task_queue as string,
    createdAt: row.created_at as Date,
  };
}

/** A team's webhooks, oldest first. */
export const WEBHOOK_ORDER: KeysetOrder = {
  column: 'created_at',
  type: 'timestamptz',
  key: 'id',
  keyType: 'uuid',
  direction: 'ASC',
};

/** A page of the team's webhooks, oldest first. */
export async function listWebhooks(
  manager: EntityManager,
  teamId: string,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<Webhook>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    { columns: COLUMNS, from: 'webhooks', where: 'team_id = $1', params: [teamId] },
    WEBHOOK_ORDER,
    page.limit,
    page.after,
  );
  return { rows: rows.map(toWebhook), ...(next ? { next } : {}) };
}

/** A webhook of the team (null for another team's, as for none). */
export async function findWebhook(manager: EntityManager, id: string, teamId: string): Promise<Webhook | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1 AND team_id = $2`, [
    id,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toWebhook(rows[0]) : null;
}

export interface AttemptRecord {
  attempt: number;
  at: string;
  duration_ms: number;
  http_status?: number;
  error?: string;
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  runId: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastHttpStatus: number | null;
  lastError: string | null;
  attemptLog: AttemptRecord[];
  createdAt: Date;
  lastAttemptAt: Date | null;
  finishedAt: Date | null;
}

/**
 * Up to `limit` deliveries of a webhook, newest event first, those before event `beforeEventId`
 * when given (a webhook has one delivery per event). `hasMore`: older ones follow.
 */
export async function listDeliveries(
  manager: EntityManager,
  webhookId: string,
  page: { limit: number; beforeEventId?: string },
): Promise<{ deliveries: WebhookDelivery[]; hasMore: boolean }> {
  const rows = (await manager.query(
    `SELECT d.id, d.webhook_id, d.event_id::text AS event_id, e.event_type, e.run_id, d.status, d.attempts,
            d.last_http_status, d.last_error, d.attempt_log, d.created_at, d.last_attempt_at, d.finished_at
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 AND ($2::bigint IS NULL OR d.event_id < $2::bigint)
      ORDER BY d.event_id DESC LIMIT $3`,
    [webhookId, page.beforeEventId ?? null, page.limit + 1],
  )) as Record<string, unknown>[];
  const deliveries = rows.slice(0, page.limit).map((r): WebhookDelivery => ({
    id: r.id as string,
    webhookId: r.webhook_id as string,
    eventId: r.event_id as string,
    eventType: r.event_type as string,
    runId: r.run_id as string,
    status: r.status as WebhookDeliveryStatus,
    attempts: r.attempts as number,
    lastHttpStatus: (r.last_http_status as number | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    attemptLog: r.attempt_log as AttemptRecord[],
    createdAt: r.created_at as Date,
    lastAttemptAt: (r.last_attempt_at as Date | null) ?? null,
    finishedAt: (r.finished_at as Date | null) ?? null,
  }));
  return { deliveries, hasMore: rows.length > page.limit };
}
