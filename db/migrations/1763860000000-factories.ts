import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Factories: a team's named group of agent identities (joined by `agent_identities.factory_uid`)
 * whose FOREMAN takes work and dispatches parts of it to the others as child runs.
 *
 * A factory is made through the API or found in a FACTORY.md of an environment's repository when
 * a run provisions; `source` says which, and `file_key` is what re-discovery updates by.
 * Runs record the factory they executed for, their dispatch position in the parent (so a
 * retried dispatch finds its child) and their lineage: one row per (ancestor, descendant), which
 * is what the `ancestor_run_id` filter reads through its primary key.
 */
export class Factories1763860000000 implements MigrationInterface {
  name = 'Factories1763860000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE factories (
        uid text PRIMARY KEY,
        team_id uuid NOT NULL REFERENCES teams(id),
        name text NOT NULL,
        description text,
        environment_id text,
        instructions text,
        source jsonb NOT NULL DEFAULT '{"type": "API"}'::jsonb,
        file_key text,
        created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
        updated_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX factories_team ON factories (team_id, created_at, uid)`);
    await q.query(`CREATE UNIQUE INDEX factories_file ON factories (team_id, file_key) WHERE file_key IS NOT NULL`);

    await q.query(`ALTER TABLE runs ADD COLUMN factory_uid text, ADD COLUMN dispatch_key text`);
    await q.query(
      `CREATE INDEX runs_team_factory ON runs (team_id, factory_uid, updated_at DESC, run_id DESC) WHERE factory_uid IS NOT NULL`,
    );
    await q.query(
      `CREATE UNIQUE INDEX runs_dispatch ON runs (parent_run_id, dispatch_key) WHERE dispatch_key IS NOT NULL`,
    );
    await q.query(`CREATE INDEX runs_parent ON runs (parent_run_id, created_at) WHERE parent_run_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE run_lineage (
        ancestor_run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        run_id uuid NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        depth integer NOT NULL,
        PRIMARY KEY (ancestor_run_id, run_id)
      )`);
    await q.query(`CREATE INDEX run_lineage_run ON run_lineage (run_id)`);
    // Runs created with parent_run_id before lineage existed.
    await q.query(`
      WITH RECURSIVE up AS (
        SELECT run_id, parent_run_id AS ancestor_run_id, 1 AS depth FROM runs WHERE parent_run_id IS NOT NULL
        UNION ALL
        SELECT up.run_id, r.parent_run_id, up.depth + 1 FROM up JOIN runs r ON r.run_id = up.ancestor_run_id
        WHERE r.parent_run_id IS NOT NULL AND up.depth < 100
      )
      INSERT INTO run_lineage (ancestor_run_id, run_id, depth) SELECT ancestor_run_id, run_id, depth FROM up
      ON CONFLICT DO NOTHING`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_lineage`);
    await q.query(`DROP INDEX runs_parent`);
    await q.query(`DROP INDEX runs_dispatch`);
    await q.query(`DROP INDEX runs_team_factory`);
    await q.query(`ALTER TABLE runs DROP COLUMN factory_uid, DROP COLUMN dispatch_key`);
    await q.query(`DROP TABLE factories`);
  }
}
