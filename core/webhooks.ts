import { randomBytes } from 'node:crypto';

/** Event types a webhook may subscribe to (the trigger of migration 1763880000000 records them). */
export const WEBHOOK_EVENT_TYPES = ['run.state_changed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const DEFAULT_WEBHOOK_EVENT_TYPES: WebhookEventType[] = ['run.state_changed'];

/**
 * A delivery's progress: `pending` (not tried yet), `failed` (the last attempt failed; it will be
 * tried again), `succeeded` (a 2xx), `given_up` (the retry window ran out).
 */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'failed', 'succeeded', 'given_up'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** A Standard Webhooks signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
