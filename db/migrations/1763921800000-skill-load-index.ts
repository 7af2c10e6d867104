import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The `skill_load` entries of a run, which every model call of a step asks about (whether the
 * agent loaded `factory-files`, which unlocks `validate_factory_file`): a small partial index,
 * so that the question costs the same however long the run's transcript. Built CONCURRENTLY,
 * outside a transaction, as in ListIndexes1763890000000.
 */
export class SkillLoadIndex1763921800000 implements MigrationInterface {
  name = 'SkillLoadIndex1763921800000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS run_events_skill_loads ON run_events (run_id) WHERE kind = 'skill_load'`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS run_events_skill_loads`);
  }
}
