import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A fork (`POST /agent/runs/{runId}/fork`) names the run and checkpoint it started from. No
 * foreign keys: a fork outlives its source's deletion and still says where it came from.
 */
export class RunForks1763973000000 implements MigrationInterface {
  name = 'RunForks1763973000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN forked_from_run_id uuid, ADD COLUMN forked_from_checkpoint_id uuid`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN forked_from_run_id, DROP COLUMN forked_from_checkpoint_id`);
  }
}
