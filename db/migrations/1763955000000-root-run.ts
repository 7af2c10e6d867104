import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `runs.root_run_id`: the top-level run of a run's orchestration tree (itself for a top-level
 * run), which the newest official client requires on every run. Set when a run is inserted;
 * runs made before this migration get it from their lineage.
 */
export class RootRun1763955000000 implements MigrationInterface {
  name = 'RootRun1763955000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN root_run_id uuid`);
    await q.query(`
      UPDATE runs r SET root_run_id = COALESCE(
        (SELECT l.ancestor_run_id FROM run_lineage l WHERE l.run_id = r.run_id ORDER BY l.depth DESC LIMIT 1),
        r.run_id)`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN root_run_id`);
  }
}
