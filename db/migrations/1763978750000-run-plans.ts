import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plans: one row per version of a run's plan (a `PLAN` artifact), made by the `submit_plan` tool
 * or by the final answer of a turn in plan mode. A run has one plan document (`document_uid`,
 * stable); each submission is its next `version`, with its own `artifact_uid`. Keyed by the call
 * that made it (`source_key`), so that a retried step records it once.
 *
 * A webhook's event keeps the run's plans as they were at the state change (`plans`, without
 * their markdown, which `GET /agent/artifacts/{uid}` serves), beside its files.
 */
export class RunPlans1763978750000 implements MigrationInterface {
  name = 'RunPlans1763978750000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS run_plans (
        artifact_uid uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        team_id uuid NOT NULL,
        turn integer NOT NULL,
        source_key text NOT NULL,
        document_uid uuid NOT NULL,
        version integer NOT NULL,
        title text NOT NULL,
        markdown text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        UNIQUE (run_id, source_key),
        UNIQUE (run_id, version)
      )`);
    await q.query(`ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS plans jsonb NOT NULL DEFAULT '[]'::jsonb`);
    await q.query(recordWebhookDeliveries(true));
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(recordWebhookDeliveries(false));
    await q.query(`ALTER TABLE webhook_events DROP COLUMN IF EXISTS plans`);
    await q.query(`DROP TABLE IF EXISTS run_plans`);
  }
}

/** The trigger function of migration 1763880000000 (webhooks), with the plans' snapshot or without. */
function recordWebhookDeliveries(withPlans: boolean): string {
  const plans = withPlans
    ? `,
               COALESCE((SELECT jsonb_agg(to_jsonb(p) - 'markdown' ORDER BY p.version)
                           FROM run_plans p WHERE p.run_id = r.run_id), '[]'::jsonb)`
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
        INSERT INTO webhook_events (id, run_id, event_type, occurred_at, run, artifacts${withPlans ? ', plans' : ''})
        SELECT NEW.id, NEW.run_id, 'run.state_changed', NEW.created_at, to_jsonb(r),
               COALESCE((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.created_at, a.artifact_uid)
                           FROM artifacts a WHERE a.run_id = r.run_id), '[]'::jsonb)${plans}
          FROM runs r WHERE r.run_id = NEW.run_id;
        -- A webhook being deleted right now is skipped, not waited for: its deletion must not fail the state change.
        INSERT INTO webhook_deliveries (webhook_id, event_id)
        SELECT id, NEW.id FROM webhooks WHERE team_id = team AND 'run.state_changed' = ANY(event_types)
           FOR KEY SHARE SKIP LOCKED;
        PERFORM pg_notify('webhook_deliveries', NEW.id::text);
        RETURN NULL;
      END $$`;
}
