import type { EntityManager } from 'typeorm';
import { auditEventText, type AuditEvent } from '../core/audit/audit-event';

type NewAuditEvent = Omit<AuditEvent, 'seq' | 'prevHash' | 'hash'>;

/**
 * Appends an event to its team's chain in one statement: the head row's lock (taken by the
 * upsert) orders concurrent writers, and the link is computed from the head's hash under it.
 * Returns where the event sits.
 */
export async function appendAuditEvent(
  manager: EntityManager,
  event: NewAuditEvent,
): Promise<Pick<AuditEvent, 'seq' | 'prevHash' | 'hash'>> {
  const [row] = (await manager.query(
    `WITH head AS (
       INSERT INTO audit_chain_heads AS h (team_id, last_seq, prev_hash, last_hash)
       VALUES ($1, 1, '', encode(sha256(convert_to(E'\\n' || $2, 'UTF8')), 'hex'))
       ON CONFLICT (team_id) DO UPDATE
         SET last_seq = h.last_seq + 1,
             prev_hash = h.last_hash,
             last_hash = encode(sha256(convert_to(h.last_hash || E'\\n' || $2, 'UTF8')), 'hex')
       RETURNING last_seq, prev_hash, last_hash
     )
     INSERT INTO audit_events (team_id, seq, event_id, occurred_at, action, outcome, actor_type, actor_uid,
                               actor_key_prefix, resource_type, resource_id, request_id, client_address,
                               details, prev_hash, hash)
     SELECT $1, last_seq, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, prev_hash, last_hash FROM head
     RETURNING seq, prev_hash, hash`,
    [
      event.teamId,
      auditEventText(event),
      event.eventId,
      event.occurredAt,
      event.action,
      event.outcome,
      event.actor.type,
      event.actor.uid,
      event.actor.keyPrefix ?? null,
      event.resource.type,
      event.resource.id ?? null,
      event.requestId ?? null,
      event.clientAddress ?? null,
      event.details === undefined ? null : JSON.stringify(event.details),
    ],
  )) as { seq: string; prev_hash: string; hash: string }[];
  return { seq: Number(row!.seq), prevHash: row!.prev_hash, hash: row!.hash };
}

/**
 * Deletes up to `batch` of the oldest events of one team, stopping at the first that occurred at
 * or after `cutoff` (a chain is pruned from its start only, whatever the writers' clocks), and
 * records on its head the last link deleted, so that the chain still verifies from there. The
 * only statement that may delete events: the table's trigger lets it through because of this
 * transaction's setting. Returns how many it deleted.
 */
export async function pruneAuditEvents(
  manager: EntityManager,
  teamId: string,
  cutoff: Date,
  batch: number,
): Promise<number> {
  return manager.transaction(async (tx) => {
    await tx.query(`SELECT set_config('agent_runs.audit_retention', 'on', true)`);
    const [row] = (await tx.query(
      `WITH oldest AS (
         SELECT seq, hash, occurred_at FROM audit_events WHERE team_id = $1 ORDER BY seq LIMIT $3
       ), doomed AS (
         SELECT seq, hash FROM oldest
          WHERE seq < COALESCE((SELECT min(seq) FROM oldest WHERE occurred_at >= $2), 9223372036854775807)
       ), gone AS (
         DELETE FROM audit_events e USING doomed d WHERE e.team_id = $1 AND e.seq = d.seq RETURNING e.seq, e.hash
       ), last AS (
         SELECT seq, hash FROM gone ORDER BY seq DESC LIMIT 1
       ), moved AS (
         UPDATE audit_chain_heads h SET pruned_through_seq = last.seq, pruned_through_hash = last.hash
           FROM last WHERE h.team_id = $1
       )
       SELECT count(*)::int AS deleted FROM gone`,
      [teamId, cutoff, batch],
    )) as { deleted: number }[];
    return row!.deleted;
  });
}

/** Teams with an event older than `cutoff`: those retention has work in. */
export async function teamsWithAuditEventsBefore(manager: EntityManager, cutoff: Date): Promise<string[]> {
  const rows = (await manager.query(
    `SELECT h.team_id FROM audit_chain_heads h
      WHERE EXISTS (SELECT 1 FROM audit_events e WHERE e.team_id = h.team_id AND e.seq = h.pruned_through_seq + 1
                       AND e.occurred_at < $1)`,
    [cutoff],
  )) as { team_id: string }[];
  return rows.map((r) => r.team_id);
}
