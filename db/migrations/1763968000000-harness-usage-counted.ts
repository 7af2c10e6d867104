import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The CLI invocations whose usage is already in `run_harness_state`'s sums (`usage_counted`,
 * their transcript keys: `t<turn>-s<step>-i<attempt>`): an invocation's usage is added once,
 * whether its own worker adds it or, after that worker died, the next attempt replays its output.
 */
export class HarnessUsageCounted1763968000000 implements MigrationInterface {
  name = 'HarnessUsageCounted1763968000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_harness_state ADD COLUMN usage_counted text[] NOT NULL DEFAULT '{}'`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_harness_state DROP COLUMN usage_counted`);
  }
}
