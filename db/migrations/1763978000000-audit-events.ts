import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log: one hash chain of events per team. `audit_chain_heads` holds each chain's newest
 * link (and, once retention has pruned its oldest events, the last link pruned), so that removing
 * the newest or oldest events is as detectable as editing one in the middle. A trigger keeps the
 * events append-only: no UPDATE ever, and DELETE only inside a transaction that set
 * `agent_runs.audit_retention` (the retention's own statement does). No foreign key to `teams`:
 * a deleted team's record outlives it until its retention.
 */
export class AuditEvents1763978000000 implements MigrationInterface {
  name = 'AuditEvents1763978000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_chain_heads (
        team_id uuid PRIMARY KEY,
        last_seq bigint NOT NULL,
        last_hash text NOT NULL,
        prev_hash text NOT NULL,
        pruned_through_seq bigint NOT NULL DEFAULT 0,
        pruned_through_hash text NOT NULL DEFAULT ''
      )`);
    await q.query(`
      CREATE TABLE audit_events (
        team_id uuid NOT NULL,
        seq bigint NOT NULL,
        event_id uuid NOT NULL UNIQUE,
        occurred_at timestamptz NOT NULL,
        action text NOT NULL,
        outcome text NOT NULL,
        actor_type text NOT NULL,
        actor_uid text NOT NULL,
        actor_key_prefix text,
        resource_type text NOT NULL,
        resource_id text,
        request_id text,
        client_address text,
        details jsonb,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        PRIMARY KEY (team_id, seq)
      )`);
    await q.query(`CREATE INDEX audit_events_team_time ON audit_events (team_id, occurred_at DESC, event_id DESC)`);
    await q.query(`CREATE INDEX audit_events_occurred ON audit_events (occurred_at)`);
    await q.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('agent_runs.audit_retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP;
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
        FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
    await q.query(`
      CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
        FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_events`);
    await q.query(`DROP FUNCTION audit_events_append_only()`);
    await q.query(`DROP TABLE audit_chain_heads`);
  }
}
