import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run.pull_request_changed`: a webhook event per change of a run's pull request. Such a change
 * is exactly a `pull_request` entry of `run_events` (db/pull-request-events.ts appends one when a
 * pull request is opened or its status changes, in the transaction that records it, and none when
 * the same status is reported again), so the delivery trigger of migration 1763880000000 also
 * fires on those entries: the event keeps the run as for a state change plus the entry's payload
 * with the pull request's branch (`webhook_events.pull_request_change`), and goes to the team's webhooks subscribed to that
 * type. The trigger function is replaced again (last by migration 1763979100000).
 */
export class WebhookPullRequestChanges1763979300000 implements MigrationInterface {
  name = 'WebhookPullRequestChanges1763979300000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS pull_request_change jsonb`);
    await q.query(recordWebhookDeliveries(true));
    await q.query(recordOn(`NEW.kind IN ('state', 'pull_request')`));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(recordOn(`NEW.kind = 'state'`));
    await q.query(recordWebhookDeliveries(false));
    await q.query(`ALTER TABLE webhook_events DROP COLUMN IF EXISTS pull_request_change`);
  }
}

/** The delivery trigger on `run_events`, for the entries `when` picks. */
function recordOn(when: string): string {
  return `
      DROP TRIGGER IF EXISTS run_events_webhook_deliveries ON run_events;
      CREATE TRIGGER run_events_webhook_deliveries AFTER INSERT ON run_events
        FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION record_webhook_deliveries()`;
}

/** The trigger function of migration 1763979100000, for pull request changes too or for state changes only. */
function recordWebhookDeliveries(withPullRequestChanges: boolean): string {
  const eventType = withPullRequestChanges
    ? `CASE NEW.kind WHEN 'pull_request' THEN 'run.pull_request_changed' ELSE 'run.state_changed' END`
    : `'run.state_changed'`;
  return `
      CREATE OR REPLACE FUNCTION record_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        team uuid;
        change_type text := ${eventType};
      BEGIN
        SELECT team_id INTO team FROM runs WHERE run_id = NEW.run_id;
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE team_id = team AND change_type = ANY(event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_events (id, run_id, event_type, occurred_at, run, artifacts, plans, pull_requests${withPullRequestChanges ? ', pull_request_change' : ''})
        SELECT NEW.id, NEW.run_id, change_type, NEW.created_at, to_jsonb(r),
               COALESCE((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.created_at, a.artifact_uid)
                           FROM artifacts a WHERE a.run_id = r.run_id), '[]'::jsonb),
               COALESCE((SELECT jsonb_agg(to_jsonb(p) - 'markdown' ORDER BY p.version)
                           FROM run_plans p WHERE p.run_id = r.run_id), '[]'::jsonb),
               COALESCE((SELECT jsonb_agg(to_jsonb(q) ORDER BY q.created_at, q.repository)
                           FROM run_pull_requests q WHERE q.run_id = r.run_id AND q.url IS NOT NULL), '[]'::jsonb)${
                             withPullRequestChanges
                               ? `,
               CASE WHEN NEW.kind = 'pull_request' THEN NEW.payload || jsonb_build_object('branch',
                 (SELECT q.branch FROM run_pull_requests q WHERE q.run_id = NEW.run_id AND q.repository = NEW.payload->>'repository'))
               END`
                               : ''
                           }
          FROM runs r WHERE r.run_id = NEW.run_id;
        -- A webhook being deleted right now is skipped, not waited for: its deletion must not fail the state change.
        INSERT INTO webhook_deliveries (webhook_id, event_id)
        SELECT id, NEW.id FROM webhooks WHERE team_id = team AND change_type = ANY(event_types)
           FOR KEY SHARE SKIP LOCKED;
        PERFORM pg_notify('webhook_deliveries', NEW.id::text);
        RETURN NULL;
      END $$`;
}
