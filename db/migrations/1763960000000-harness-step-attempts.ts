import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many times the CLI's current step was started (`step_attempt`). Transcript keys, the raw
 * log's name and the resume notice carry it: the Temporal attempt cannot serve, since a step
 * rescheduled after a schedule-to-start timeout starts again at attempt 1 and its events would
 * collide with (and be dropped as duplicates of) the first invocation's.
 */
export class HarnessStepAttempts1763960000000 implements MigrationInterface {
  name = 'HarnessStepAttempts1763960000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_harness_state ADD COLUMN step_attempt integer NOT NULL DEFAULT 0`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_harness_state DROP COLUMN step_attempt`);
  }
}
