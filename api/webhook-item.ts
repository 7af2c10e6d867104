import type { WebhookEventType } from '../core/webhooks';
import type { Webhook, WebhookDelivery } from '../db/webhook-reads';

/** A webhook as every endpoint shows it: never its secret. */
export function toWebhookItem(webhook: Webhook) {
  return {
    id: webhook.id,
    url: webhook.url,
    event_types: webhook.eventTypes as WebhookEventType[],
    created_at: webhook.createdAt.toISOString(),
  };
}

/** One entry of a webhook's delivery log. */
export function toDeliveryItem(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    event_type: delivery.eventType as WebhookEventType,
    run_id: delivery.runId,
    status: delivery.status,
    attempts: delivery.attempts,
    last_http_status: delivery.lastHttpStatus,
    last_error: delivery.lastError,
    created_at: delivery.createdAt.toISOString(),
    last_attempt_at: delivery.lastAttemptAt?.toISOString() ?? null,
    finished_at: delivery.finishedAt?.toISOString() ?? null,
    attempt_log: delivery.attemptLog,
  };
}
