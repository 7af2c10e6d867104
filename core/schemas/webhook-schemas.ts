import { z } from './zod';
import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES } from '../webhooks';
import { resourcePageInfoSchema } from './resource-page-schemas';

/** Request and response schemas of `/agent/webhooks`, defined once for validation and the API description. */

export const MAX_WEBHOOK_URL_CHARS = 2048;

/** `POST /agent/webhooks`. */
export const createWebhookSchema = z.strictObject({
  url: z.string().min(1).max(MAX_WEBHOOK_URL_CHARS),
  event_types: z
    .array(
      z.enum(WEBHOOK_EVENT_TYPES, {
        error: (issue) =>
          `unknown event type ${JSON.stringify(issue.input)}; the event types are ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      }),
    )
    .min(1, 'give at least one event type, or leave `event_types` out for run.state_changed')
    .max(WEBHOOK_EVENT_TYPES.length * 4)
    .optional()
    .openapi({
      description:
        'What the webhook is told of (default `["run.state_changed"]`): `run.state_changed`, each state a run enters; `run.pull_request_changed`, each pull request of a run opened or changing status (open, draft, merged, closed), the delivery\'s `pull_request` being `{repository, url, branch, status, previous_status}` beside the run in `data` (docs/guide/webhooks.md).',
    }),
});

export type CreateWebhookRequest = z.infer<typeof createWebhookSchema>;

export const webhookItemSchema = z.object({
  id: z.uuid(),
  url: z.string(),
  event_types: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  created_at: z.iso.datetime(),
});

/** The answer to a create: the only time the signing secret is shown. */
export const createdWebhookSchema = webhookItemSchema.extend({
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/]{43}=$/),
});

export const webhookListSchema = z.object({ webhooks: z.array(webhookItemSchema), page_info: resourcePageInfoSchema });

export const webhookAttemptSchema = z.object({
  attempt: z.int().min(1),
  at: z.iso.datetime(),
  duration_ms: z.int().min(0),
  http_status: z.int().optional(),
  error: z.string().optional(),
});

export const webhookDeliverySchema = z.object({
  /** Also the `webhook-id` header of every attempt. */
  id: z.uuid(),
  event_id: z.string(),
  event_type: z.enum(WEBHOOK_EVENT_TYPES),
  run_id: z.uuid(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  attempts: z.int().min(0),
  last_http_status: z.int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.iso.datetime(),
  last_attempt_at: z.iso.datetime().nullable(),
  finished_at: z.iso.datetime().nullable(),
  attempt_log: z.array(webhookAttemptSchema),
});

export const webhookDeliveryListSchema = z.object({
  deliveries: z.array(webhookDeliverySchema),
  page_info: z.object({ has_next_page: z.boolean(), next_cursor: z.string().optional() }),
});
