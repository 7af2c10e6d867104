import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { auditEventListSchema, auditEventsQuerySchema } from '../../core/schemas/audit-schemas';
import { registerOperation } from './common';

/** The team's audit log. */
export function registerAuditOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/audit-events',
    operationId: 'listAuditEvents',
    summary: "The team's audit log, newest first",
    description:
      "Admin keys only. Every change made through the API, the operator commands and the service itself, refused attempts too (`outcome: denied`), never a secret's value. Each event carries the hash of the one before it in the team's chain (`npm run audit -- verify` checks it). Filters combine.",
    tags: ['Audit'],
    query: auditEventsQuerySchema,
    responses: [{ status: 200, description: 'A page of events.', schema: auditEventListSchema }],
    errors: [400, 403],
  });
}
