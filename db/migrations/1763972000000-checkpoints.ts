import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Checkpoints of runs' files (activities/checkpoints): each names its manifest in the object
 * store (the entries that changed since its parent, or all of them), what the run's files were
 * then (files, bytes), what it stored anew, and the run's events it follows (`events_through`,
 * the id of the last transcript event recorded when it was taken: a fork's conversation ends
 * there). `checkpoint_objects` lists the objects a checkpoint stored first or holds for its run
 * (a fork's first checkpoint holds all it needs): an object no row names is garbage.
 */
export class Checkpoints1763972000000 implements MigrationInterface {
  name = 'Checkpoints1763972000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE checkpoints (
        checkpoint_id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        team_id uuid NOT NULL,
        turn integer NOT NULL,
        step integer NOT NULL,
        parent_id uuid REFERENCES checkpoints(checkpoint_id) ON DELETE CASCADE,
        manifest_key text NOT NULL,
        full_manifest boolean NOT NULL,
        chain_length integer NOT NULL,
        files integer NOT NULL,
        bytes bigint NOT NULL,
        bytes_added bigint NOT NULL,
        events_through bigint NOT NULL,
        created_at timestamptz(3) NOT NULL,
        UNIQUE (run_id, turn, step)
      )`);
    await q.query(`CREATE INDEX checkpoints_run_order ON checkpoints (run_id, created_at, checkpoint_id)`);
    await q.query(`CREATE INDEX checkpoints_team ON checkpoints (team_id)`);
    await q.query(`
      CREATE TABLE checkpoint_objects (
        checkpoint_id uuid NOT NULL REFERENCES checkpoints(checkpoint_id) ON DELETE CASCADE,
        object_key text NOT NULL,
        size_bytes bigint NOT NULL,
        PRIMARY KEY (checkpoint_id, object_key)
      )`);
    await q.query(`CREATE INDEX checkpoint_objects_key ON checkpoint_objects (object_key)`);
    await q.query(`ALTER TABLE runs ADD COLUMN base_commits jsonb`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN base_commits`);
    await q.query(`DROP TABLE checkpoint_objects`);
    await q.query(`DROP TABLE checkpoints`);
  }
}
