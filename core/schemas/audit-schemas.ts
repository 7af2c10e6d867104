import { z } from './zod';
import { resourcePageInfoSchema } from './resource-page-schemas';

export const AUDIT_PAGE_DEFAULT = 100;
export const AUDIT_PAGE_MAX = 1000;

const timestamp = z.iso.datetime({ offset: true }).openapi({ description: 'RFC 3339.' });

/** The query of `GET /audit-events`. */
export const auditEventsQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(AUDIT_PAGE_MAX).optional().openapi({
    type: 'integer',
    default: AUDIT_PAGE_DEFAULT,
    description: 'Events per page.',
  }),
  cursor: z.string().max(2000).optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
  action: z
    .string()
    .regex(/^[a-z_]+\.([a-z_]+|\*)$/, 'must be an action such as `run.cancel`, or a family such as `webhook.*`')
    .optional()
    .openapi({ description: 'An action (`run.cancel`) or a family of actions (`webhook.*`).' }),
  actor_uid: z.string().min(1).max(200).optional().openapi({ description: "The actor's uid." }),
  resource_id: z.string().min(1).max(200).optional().openapi({ description: 'The id of what was acted on.' }),
  created_after: timestamp.optional().openapi({ description: 'Events that occurred after this time.' }),
  created_before: timestamp.optional().openapi({ description: 'Events that occurred before this time.' }),
});

const detailValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())]);

export const auditEventItemSchema = z
  .object({
    event_id: z.uuid(),
    occurred_at: z.iso.datetime(),
    action: z.string().openapi({ example: 'run.cancel' }),
    outcome: z.enum(['success', 'denied', 'failed']).openapi({
      description: '`denied`: refused for who asked (401, 403); `failed`: refused for what was asked, or it broke.',
    }),
    actor: z.object({
      type: z.enum(['user', 'service_account', 'operator', 'service']),
      uid: z.string(),
      key_prefix: z.string().nullable().openapi({ description: "The key's public prefix, when a key acted." }),
    }),
    resource: z.object({ type: z.string(), id: z.string().nullable() }),
    request_id: z.string().nullable(),
    client_address: z.string().nullable(),
    details: z
      .record(z.string(), detailValue)
      .optional()
      .openapi({ description: "What else the event says; never a secret's value." }),
    chain: z
      .object({ seq: z.number().int(), prev_hash: z.string(), hash: z.string() })
      .openapi({ description: "The event's place in its team's hash chain (`npm run audit -- verify`)." }),
  })
  .openapi('AuditEvent');

export const auditEventListSchema = z
  .object({ events: z.array(auditEventItemSchema), page_info: resourcePageInfoSchema })
  .openapi('AuditEventList');
