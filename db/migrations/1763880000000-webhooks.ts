import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks: a team's HTTP endpoints told of every run state change, and the outbox of their
 * deliveries.
 *
 * Every state change appends a `state` entry to `run_events` in the transaction that makes it
 * (db/run-store.ts, db/run-creation.ts), whoever writes it: an activity, the API's create,
 * follow-up or cancel, the reconciler. A trigger on that insert records, in the same
 * transaction, the event with a copy of the run's row and artifacts as they are at that change
 * (`webhook_events`, only when the team has a webhook for it), and one delivery per subscribed
 * webhook (`webhook_deliveries`); then it notifies `webhook_deliveries`, which PostgreSQL
 * delivers at commit, so a listening worker starts the delivery workflows at once. A delivery
 * whose workflow was never started (no worker listened, or one crashed in between) is picked up
 * by the sweeper (`workflow_started_at` still null).
 *
 * Deleting the state entry (a withdrawn run or follow-up) deletes its event and deliveries; deleting a
 * webhook deletes its deliveries (its delivery workflows then find nothing to send and end).
 */
export class Webhooks1763880000000 implements MigrationInterface {
  name = 'Webhooks1763880000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhooks (
        id uuid PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        url text NOT NULL,
        event_types text[] NOT NULL,
        secret text NOT NULL,
        task_queue text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX webhooks_team ON webhooks (team_id, created_at, id)`);
    await q.query(`
      CREATE TABLE webhook_events (
        id bigint PRIMARY KEY REFERENCES run_events(id) ON DELETE CASCADE,
        run_id uuid NOT NULL,
        event_type text NOT NULL,
        occurred_at timestamptz(3) NOT NULL,
        run jsonb NOT NULL,
        artifacts jsonb NOT NULL
      )`);
    await q.query(`CREATE INDEX webhook_events_occurred ON webhook_events (occurred_at)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_id bigint NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed', 'succeeded', 'given_up')),
        attempts integer NOT NULL DEFAULT 0,
        last_http_status integer,
        last_error text,
        attempt_log jsonb NOT NULL DEFAULT '[]'::jsonb,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        last_attempt_at timestamptz(3),
        finished_at timestamptz(3),
        workflow_started_at timestamptz(3),
        start_claimed_until timestamptz(3),
        UNIQUE (webhook_id, event_id)
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)`);
    await q.query(
      `CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (created_at) WHERE workflow_started_at IS NULL`,
    );
    await q.query(
      `CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL`,
    );
    await q.query(`
      CREATE FUNCTION record_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        team uuid;
      BEGIN
        SELECT team_id INTO team FROM runs WHERE run_id = NEW.run_id;
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE team_id = team AND 'run.state_changed' = ANY(event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_events (id, run_id, event_type, occurred_at, run, artifacts)
        SELECT NEW.id, NEW.run_id, 'run.state_changed', NEW.created_at, to_jsonb(r),
               COALESCE((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.created_at, a.artifact_uid)
                           FROM artifacts a WHERE a.run_id = r.run_id), '[]'::jsonb)
          FROM runs r WHERE r.run_id = NEW.run_id;
        -- A webhook being deleted right now is skipped, not waited for: its deletion must not fail the state change.
        INSERT INTO webhook_deliveries (webhook_id, event_id)
        SELECT id, NEW.id FROM webhooks WHERE team_id = team AND 'run.state_changed' = ANY(event_types)
           FOR KEY SHARE SKIP LOCKED;
        PERFORM pg_notify('webhook_deliveries', NEW.id::text);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER run_events_webhook_deliveries AFTER INSERT ON run_events
        FOR EACH ROW WHEN (NEW.kind = 'state') EXECUTE FUNCTION record_webhook_deliveries()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER run_events_webhook_deliveries ON run_events`);
    await q.query(`DROP FUNCTION record_webhook_deliveries()`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_events`);
    await q.query(`DROP TABLE webhooks`);
  }
}
