import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A webhook's event keeps the run's pull requests as they were at the state change
 * (`webhook_events.pull_requests`: the rows of `run_pull_requests` with a url), beside its files
 * and plans; the trigger function is replaced again (last by migration 1763978750000).
 */
export class WebhookPullRequests1763979100000 implements MigrationInterface {
  name = 'WebhookPullRequests1763979100000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS pull_requests jsonb NOT NULL DEFAULT '[]'::jsonb`,
    );
    await q.query(recordWebhookDeliveries(true));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(recordWebhookDeliveries(false));
    await q.query(`ALTER TABLE webhook_events DROP COLUMN IF EXISTS pull_requests`);
  }
}

/** The trigger function of migration 1763978750000 (with the plans), with the pull requests' snapshot or without. */
function recordWebhookDeliveries(withPullRequests: boolean): string {
  const pullRequests = withPullRequests
    ? `,
               COALESCE((SELECT jsonb_agg(to_jsonb(q) ORDER BY q.created_at, q.repository)
                           FROM run_pull_requests q WHERE q.run_id = r.run_id AND q.url IS NOT NULL), '[]'::jsonb)`
    : '';
  return `
      CREATE OR REPLACE FUNCTION record_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        team uuid;
      BEGIN
        SELECT team_id INTO team FROM runs WHERE run_id = NEW.run_id;
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE team_id = team AND 'run.state_changed' = ANY(event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_events (id, run_id, event_type, occurred_at, run, artifacts, plans${withPullRequests ? ', pull_requests' : ''})
        SELECT NEW.id, NEW.run_id, 'run.state_changed', NEW.created_at, to_jsonb(r),
               COALESCE((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.created_at, a.artifact_uid)
                           FROM artifacts a WHERE a.run_id = r.run_id), '[]'::jsonb),
               COALESCE((SELECT jsonb_agg(to_jsonb(p) - 'markdown' ORDER BY p.version)
                           FROM run_plans p WHERE p.run_id = r.run_id), '[]'::jsonb)${pullRequests}
          FROM runs r WHERE r.run_id = NEW.run_id;
        -- A webhook being deleted right now is skipped, not waited for: its deletion must not fail the state change.
        INSERT INTO webhook_deliveries (webhook_id, event_id)
        SELECT id, NEW.id FROM webhooks WHERE team_id = team AND 'run.state_changed' = ANY(event_types)
           FOR KEY SHARE SKIP LOCKED;
        PERFORM pg_notify('webhook_deliveries', NEW.id::text);
        RETURN NULL;
      END $$`;
}
