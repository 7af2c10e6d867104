import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The image a run's environment named (`image_reference`, as written) and the digest it resolved
 * to when the run was first provisioned (`image_digest`): a run provisioned again uses that same
 * digest, and its transcript says exactly what it ran on.
 */
export class RunImages1763966000000 implements MigrationInterface {
  name = 'RunImages1763966000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN image_reference text, ADD COLUMN image_digest text`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN image_reference, DROP COLUMN image_digest`);
  }
}
