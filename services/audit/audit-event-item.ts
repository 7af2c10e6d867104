import type { AuditEvent } from '../../core/audit/audit-event';

/** An event as `GET /audit-events`, `agent-runs audit` and the log line show it. */
export function auditEventItem(event: AuditEvent) {
  return {
    event_id: event.eventId,
    occurred_at: event.occurredAt.toISOString(),
    action: event.action,
    outcome: event.outcome,
    actor: { type: event.actor.type, uid: event.actor.uid, key_prefix: event.actor.keyPrefix ?? null },
    resource: { type: event.resource.type, id: event.resource.id ?? null },
    request_id: event.requestId ?? null,
    client_address: event.clientAddress ?? null,
    ...(event.details ? { details: event.details } : {}),
    chain: { seq: event.seq, prev_hash: event.prevHash, hash: event.hash },
  };
}

export type AuditEventItem = ReturnType<typeof auditEventItem>;
