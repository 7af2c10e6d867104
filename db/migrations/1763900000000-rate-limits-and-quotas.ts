import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate limits and team quotas.
 *
 * - `rate_limits`: the counters of rate-limiter-flexible's PostgreSQL store (per API key
 *   requests, per team runs per hour), in the layout that library reads and writes; made here, so
 *   the library never creates a table (`tableCreated: true`).
 * - `runs.admitted_turn`, `runs.holds_slot`, `runs.queued_at`: admission under
 *   TEAM_MAX_CONCURRENT_RUNS. A run is admitted for a turn when `admitted_turn = turn`; it then
 *   counts against its team's quota while unfinished if `holds_slot` (a child admitted under its
 *   unfinished parent does not). Waiting runs are admitted in `(queued_at, run_id)` order.
 * - `runs.admission_asked_turn`: the turn for which the run's workflow last asked for a slot. A
 *   run that never asked (no workflow works on it) stops holding the others back after a grace
 *   period (db/team-admission.ts).
 *
 * Runs unfinished at migration time were admitted by the code before it: they hold their slots.
 * Every existing row gets the migration's time as `queued_at` (a fast default, no table
 * rewrite); their time-ordered ids keep their order among themselves.
 */
export class RateLimitsAndQuotas1763900000000 implements MigrationInterface {
  name = 'RateLimitsAndQuotas1763900000000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE IF NOT EXISTS rate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`,
    );
    // The library deletes expired counters every five minutes by `expire`.
    await q.query(`CREATE INDEX IF NOT EXISTS rate_limits_expire ON rate_limits (expire)`);
    await q.query(`ALTER TABLE runs ADD COLUMN IF NOT EXISTS admitted_turn integer`);
    await q.query(`ALTER TABLE runs ADD COLUMN IF NOT EXISTS holds_slot boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE runs ADD COLUMN IF NOT EXISTS admission_asked_turn integer`);
    await q.query(`ALTER TABLE runs ADD COLUMN IF NOT EXISTS queued_at timestamptz NOT NULL DEFAULT now()`);
    await q.query(`ALTER TABLE runs ALTER COLUMN queued_at SET DEFAULT clock_timestamp()`);
    await q.query(
      `UPDATE runs SET admitted_turn = turn, holds_slot = true
        WHERE state IN ('QUEUED', 'INPROGRESS') AND admitted_turn IS NULL`,
    );
    // A team's unfinished runs in admission order: what every admission counts and scans.
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_admission ON runs (team_id, queued_at, run_id)
        WHERE state IN ('QUEUED', 'INPROGRESS')`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_admission`);
    await q.query(`ALTER TABLE runs DROP COLUMN IF EXISTS queued_at`);
    await q.query(`ALTER TABLE runs DROP COLUMN IF EXISTS admission_asked_turn`);
    await q.query(`ALTER TABLE runs DROP COLUMN IF EXISTS holds_slot`);
    await q.query(`ALTER TABLE runs DROP COLUMN IF EXISTS admitted_turn`);
    await q.query(`DROP TABLE IF EXISTS rate_limits`);
  }
}
