import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import {
  createWebhookSchema,
  createdWebhookSchema,
  webhookDeliveryListSchema,
  webhookItemSchema,
  webhookListSchema,
} from '../../core/schemas/webhook-schemas';
import { linksTo, locationHeader, registerOperation, signatureParameters } from './common';
import { runIdParams } from './runs';
import { resourcePageQuerySchema } from '../../core/schemas/resource-page-schemas';

const STREAM_DESCRIPTION =
  'Server-Sent Events: `retry: 3000` once, then one event per transcript entry in id order (`id: <event id>`, `event: <kind>`, `data: {"id","run_id","kind","turn","created_at","payload"}`), a `: ping` comment every `SSE_HEARTBEAT_SECONDS`, and `event: end` with `data: {"run_id","state"}` once the run has ended and its idle window has passed. Resume with `?after=<id>` or `Last-Event-ID`.';

/** One Server-Sent Event of a stream, as a client parses it. */
const streamEventSchema = z.object({
  id: z.string().regex(/^\d+$/).optional().openapi({ description: 'The transcript entry id (absent on `end`).' }),
  event: z
    .string()
    .optional()
    .openapi({ description: 'The entry kind (`prompt`, `assistant`, `tool_call`, `state`, ...), or `end`.' }),
  data: z.string().optional().openapi({
    description:
      'JSON: `{"id","run_id","kind","turn","created_at","payload"}` (on the session stream also `html`, the entry as the page renders it); on `end`, `{"run_id","state"}`.',
  }),
  retry: z.int().optional(),
});

const afterQuery = z.object({
  after: z
    .string()
    .regex(/^\d{1,18}$/)
    .optional()
    .openapi({ description: 'Start after this event id (wins over `Last-Event-ID`); 0 or absent: from the first.' }),
});
const lastEventIdHeader = z.object({
  'last-event-id': z
    .string()
    .regex(/^\d{1,18}$/)
    .optional()
    .openapi({ description: 'The last event id the client got.' }),
});
const webhookIdParams = z.object({ id: z.uuid().openapi({ param: { description: 'The webhook id.' } }) });

/** The live event streams and the webhooks (issue: live and scriptable). */
export function registerLiveOperations(registry: OpenAPIRegistry): void {
  const stream = (operation: {
    path: string;
    operationId: string;
    summary: string;
    description: string;
    tags: string[];
    auth?: false;
    params: z.ZodObject;
    query?: z.ZodObject;
    errors?: 403[];
  }) =>
    registerOperation(registry, {
      method: 'get',
      ...operation,
      query: operation.query ?? afterQuery,
      headers: lastEventIdHeader,
      responses: [
        { status: 200, description: 'The event stream.', contentType: 'text/event-stream', schema: streamEventSchema },
      ],
      errors: [400, 404, ...(operation.errors ?? [])],
    });
  stream({
    path: '/api/v1/agent/runs/{runId}/events',
    operationId: 'streamRunEvents',
    summary: "Follow a run's transcript live",
    description: STREAM_DESCRIPTION,
    tags: ['Runs'],
    params: runIdParams,
  });
  stream({
    path: '/sessions/{sessionId}/events',
    operationId: 'streamSessionEvents',
    summary: "Follow a transcript page's run live (with the page's signed query)",
    description: `${STREAM_DESCRIPTION} Each event's data also carries \`html\`, the entry as the transcript page renders it. Opened with the \`expires\` and \`signature\` of the page's \`session_link\` (403 without them, or once expired); a stream open then runs on.`,
    tags: ['Service'],
    auth: false,
    params: z.object({ sessionId: z.string().openapi({ param: { description: 'The run’s session id.' } }) }),
    query: afterQuery.extend(signatureParameters),
    errors: [403],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/sessions/live.js',
    operationId: 'getTranscriptScript',
    summary: 'The script with which a transcript page follows its run',
    tags: ['Service'],
    auth: false,
    responses: [{ status: 200, description: 'The script.', contentType: 'text/javascript', schema: z.string() }],
  });

  const tags = ['Webhooks'];
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/webhooks',
    operationId: 'createWebhook',
    summary: "Subscribe a URL to run state changes (and, asked for, pull requests' status changes)",
    description:
      'The URL must be http(s) and resolve to a public address (or a host the operator lists in `OUTBOUND_ALLOWED_PRIVATE_HOSTS`). The `secret` (Standard Webhooks, `whsec_…`) is shown only here.',
    tags,
    body: { schema: createWebhookSchema },
    responses: [
      {
        status: 201,
        description: 'The webhook, with its signing secret.',
        schema: createdWebhookSchema,
        headers: locationHeader,
        links: linksTo('/id', 'id', ['getWebhook', 'deleteWebhook', 'listWebhookDeliveries']),
      },
    ],
    errors: [400, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/webhooks',
    operationId: 'listWebhooks',
    summary: "The team's webhooks (never their secrets)",
    tags,
    query: resourcePageQuerySchema,
    responses: [{ status: 200, description: 'The webhooks.', schema: webhookListSchema }],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/webhooks/{id}',
    operationId: 'getWebhook',
    summary: 'A webhook',
    tags,
    params: webhookIdParams,
    responses: [{ status: 200, description: 'The webhook.', schema: webhookItemSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/webhooks/{id}',
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook; its pending deliveries stop',
    tags,
    params: webhookIdParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/webhooks/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: "A webhook's delivery log, newest first",
    tags,
    params: webhookIdParams,
    query: z.object({
      limit: z.coerce.number().int().min(1).max(100).optional().openapi({ description: 'Page size (default 20).' }),
      cursor: z.string().optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
    }),
    responses: [{ status: 200, description: 'The deliveries.', schema: webhookDeliveryListSchema }],
    errors: [400, 404],
  });
}
