import type { EntityManager } from 'typeorm';
import type { AuditActorType, AuditDetailValue, AuditEvent, AuditOutcome } from '../core/audit/audit-event';
import type { AuditChainHead } from '../core/audit/chain-check';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

/** Newest first, as `GET /audit-events` lists them. */
export const AUDIT_EVENT_ORDER: KeysetOrder = {
  column: 'occurred_at',
  type: 'timestamptz',
  key: 'event_id',
  keyType: 'uuid',
  direction: 'DESC',
};

export interface AuditEventFilters {
  action?: string;
  actorUid?: string;
  resourceId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
}

const COLUMNS = `team_id, seq, event_id, occurred_at, action, outcome, actor_type, actor_uid, actor_key_prefix,
  resource_type, resource_id, request_id, client_address, details, prev_hash, hash`;

interface AuditEventRow {
  team_id: string;
  seq: string;
  event_id: string;
  occurred_at: Date;
  action: string;
  outcome: AuditOutcome;
  actor_type: AuditActorType;
  actor_uid: string;
  actor_key_prefix: string | null;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  client_address: string | null;
  details: Record<string, AuditDetailValue> | null;
  prev_hash: string;
  hash: string;
}

function auditEventOf(r: AuditEventRow): AuditEvent {
  return {
    teamId: r.team_id,
    seq: Number(r.seq),
    eventId: r.event_id,
    occurredAt: r.occurred_at,
    action: r.action,
    outcome: r.outcome,
    actor: { type: r.actor_type, uid: r.actor_uid, ...(r.actor_key_prefix ? { keyPrefix: r.actor_key_prefix } : {}) },
    resource: { type: r.resource_type, ...(r.resource_id !== null ? { id: r.resource_id } : {}) },
    ...(r.request_id !== null ? { requestId: r.request_id } : {}),
    ...(r.client_address !== null ? { clientAddress: r.client_address } : {}),
    ...(r.details !== null ? { details: r.details } : {}),
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

/** A page of one team's events, newest first, narrowed by `filters`. */
export async function readAuditEventPage(
  manager: EntityManager,
  teamId: string,
  filters: AuditEventFilters,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<AuditEvent>> {
  const params: unknown[] = [teamId];
  const where = ['team_id = $1'];
  const add = (clause: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (filters.action !== undefined) {
    // `webhook.*` names a family of actions.
    if (filters.action.endsWith('.*')) add((n) => `starts_with(action, ${n})`, filters.action.slice(0, -1));
    else add((n) => `action = ${n}`, filters.action);
  }
  if (filters.actorUid !== undefined) add((n) => `actor_uid = ${n}`, filters.actorUid);
  if (filters.resourceId !== undefined) add((n) => `resource_id = ${n}`, filters.resourceId);
  if (filters.createdAfter) add((n) => `occurred_at > ${n}`, filters.createdAfter);
  if (filters.createdBefore) add((n) => `occurred_at < ${n}`, filters.createdBefore);
  const result = await selectKeysetPage(
    manager,
    { columns: COLUMNS, from: 'audit_events', where: where.join(' AND '), params },
    AUDIT_EVENT_ORDER,
    page.limit,
    page.after,
  );
  return { rows: (result.rows as unknown as AuditEventRow[]).map(auditEventOf), next: result.next };
}

/** Every team's chain head, or one team's. */
export async function readAuditChainHeads(manager: EntityManager, teamId?: string): Promise<AuditChainHead[]> {
  const rows = (await manager.query(
    `SELECT team_id, last_seq, last_hash, pruned_through_seq, pruned_through_hash FROM audit_chain_heads
      WHERE $1::uuid IS NULL OR team_id = $1 ORDER BY team_id`,
    [teamId ?? null],
  )) as {
    team_id: string;
    last_seq: string;
    last_hash: string;
    pruned_through_seq: string;
    pruned_through_hash: string;
  }[];
  return rows.map((r) => ({
    teamId: r.team_id,
    lastSeq: Number(r.last_seq),
    lastHash: r.last_hash,
    prunedThroughSeq: Number(r.pruned_through_seq),
    prunedThroughHash: r.pruned_through_hash,
  }));
}

/** Up to `limit` of a team's events after `afterSeq`, in chain order. */
export async function readAuditEventsAfter(
  manager: EntityManager,
  teamId: string,
  afterSeq: number,
  limit: number,
): Promise<AuditEvent[]> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM audit_events WHERE team_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [teamId, afterSeq, limit],
  )) as AuditEventRow[];
  return rows.map(auditEventOf);
}
