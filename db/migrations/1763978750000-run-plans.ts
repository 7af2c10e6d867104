import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plans: one row per version of a run's plan (a `PLAN` artifact), made by the `submit_plan` tool
 * or by the final answer of a turn in plan mode. A run has one plan document (`document_uid`,
 * stable); each submission is its next `version`, with its own `artifact_uid`. Keyed by the call
 * that made it (`source_key`), so that a retried step records it once.
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
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS run_plans`);
  }
}
