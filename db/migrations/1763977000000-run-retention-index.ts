import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention (RUN_RETENTION_DAYS) reads the runs that ended longest ago first: an index on when
 * runs ended. Built CONCURRENTLY, outside a transaction, so that a deployment keeps accepting
 * runs while it builds.
 */
export class RunRetentionIndex1763977000000 implements MigrationInterface {
  name = 'RunRetentionIndex1763977000000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_ended`);
  }
}
