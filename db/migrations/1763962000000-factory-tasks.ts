import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A factory's task board: a task is bound to an agent conversation (at most one live task per
 * conversation, whatever the factory), has a stage, and is soft-deleted (`deleted_at`), which
 * frees its conversation for a new task.
 */
export class FactoryTasks1763962000000 implements MigrationInterface {
  name = 'FactoryTasks1763962000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE factory_tasks (
        uid text PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams (id),
        factory_uid text NOT NULL REFERENCES factories (uid) ON DELETE CASCADE,
        conversation_id uuid NOT NULL,
        title text NOT NULL,
        description text,
        stage text NOT NULL CHECK (stage IN ('TRIAGE', 'SPEC', 'IMPLEMENT', 'REVIEW', 'COMPLETE', 'CANCELLED')),
        author_uid text NOT NULL,
        author_display_name text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        deleted_at timestamptz(3)
      )`);
    await q.query(
      `CREATE UNIQUE INDEX factory_tasks_live_conversation ON factory_tasks (conversation_id) WHERE deleted_at IS NULL`,
    );
    await q.query(
      `CREATE INDEX factory_tasks_board ON factory_tasks (factory_uid, created_at, uid) WHERE deleted_at IS NULL`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE factory_tasks`);
  }
}
