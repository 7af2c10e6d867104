import { createHash } from 'node:crypto';

/**
 * Who did it: a key's holder (`user`, or `service_account` for an agent's key, as runs' creators
 * are typed), an operator at a command line, or the service itself.
 */
export type AuditActorType = 'user' | 'service_account' | 'operator' | 'service';

/** `success`: it happened; `denied`: refused for who asked (401, 403); `failed`: refused for what was asked, or broke. */
export type AuditOutcome = 'success' | 'denied' | 'failed';

/** Values a detail may take: flat, so that an event reads the same in a log line, a row and a SIEM. */
export type AuditDetailValue = string | number | boolean | null | string[];

export interface AuditActor {
  type: AuditActorType;
  uid: string;
  keyPrefix?: string;
}

/** What happened, as the one who records it says: everything of an event but where it sits in its chain. */
export interface AuditRecord {
  teamId: string;
  action: string;
  outcome: AuditOutcome;
  actor: AuditActor;
  resource: { type: string; id?: string };
  requestId?: string;
  clientAddress?: string;
  details?: Record<string, AuditDetailValue>;
}

/** An event as it is stored: the record, when, its id, and its links in the team's chain. */
export interface AuditEvent extends AuditRecord {
  eventId: string;
  occurredAt: Date;
  seq: number;
  prevHash: string;
  hash: string;
}

type Canonical = null | boolean | number | string | Canonical[] | { [key: string]: Canonical };

/** JSON with object keys sorted at every level: the same text for the same event, wherever it was read. */
function canonicalJson(value: Canonical): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The text an event's hash covers: every field of the record, its id and time, in one fixed form. */
export function auditEventText(event: Omit<AuditEvent, 'seq' | 'prevHash' | 'hash'>): string {
  return canonicalJson({
    event_id: event.eventId,
    occurred_at: event.occurredAt.toISOString(),
    team_id: event.teamId,
    action: event.action,
    outcome: event.outcome,
    actor: { type: event.actor.type, uid: event.actor.uid, key_prefix: event.actor.keyPrefix ?? null },
    resource: { type: event.resource.type, id: event.resource.id ?? null },
    request_id: event.requestId ?? null,
    client_address: event.clientAddress ?? null,
    details: event.details ?? null,
  });
}

/**
 * An event's link: SHA-256 (hex) of the previous link, a newline and the event's text. PostgreSQL
 * computes the same in the statement that appends it (db/audit-events.ts), so that the chain's
 * order is the order the head row's lock gives, whatever the writers' clocks.
 */
export function auditLink(prevHash: string, text: string): string {
  return createHash('sha256').update(`${prevHash}\n${text}`, 'utf8').digest('hex');
}
