import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agent step (`t<turn>-s<step>`) whose attempt is running on some worker (`runs.step_in_flight`):
 * set when an attempt starts, cleared when it ends, and left set by an attempt whose worker
 * died or stopped under it, so that the next attempt knows it resumes an interrupted step.
 */
export class StepInFlight1763970000000 implements MigrationInterface {
  name = 'StepInFlight1763970000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN step_in_flight text`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN step_in_flight`);
  }
}
