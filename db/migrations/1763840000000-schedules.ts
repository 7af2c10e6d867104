import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A team's scheduled agents (each one a Temporal Schedule, which owns its timing and paused
 * state), and the schedule a run was created by.
 */
export class Schedules1763840000000 implements MigrationInterface {
  name = 'Schedules1763840000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE schedules (
        schedule_id uuid PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        name text NOT NULL,
        cron_schedule text NOT NULL,
        prompt text NOT NULL,
        agent_config jsonb NOT NULL,
        metadata jsonb,
        agent_uid text,
        creator_uid text NOT NULL,
        creator_type text NOT NULL,
        creator_display_name text NOT NULL,
        updater_uid text NOT NULL,
        updater_type text NOT NULL,
        updater_display_name text NOT NULL,
        last_spawn_error text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX schedules_team ON schedules (team_id, created_at DESC)`);
    // {schedule_id, schedule_name, cron_schedule} as they were when the run was created.
    await q.query(`ALTER TABLE runs ADD COLUMN schedule jsonb`);
    await q.query(
      `CREATE INDEX runs_schedule ON runs (team_id, (schedule->>'schedule_id')) WHERE schedule IS NOT NULL`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_schedule`);
    await q.query(`ALTER TABLE runs DROP COLUMN schedule`);
    await q.query(`DROP TABLE schedules`);
  }
}
