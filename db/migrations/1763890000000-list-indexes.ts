import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes for every filter of the run list at millions of runs (`npm run bench:list`). Each
 * equality filter has a (team, value, updated_at, run_id) index, so that the default sort reads
 * just one page of it; `q` has trigram indexes on the three columns it searches.
 *
 * Built CONCURRENTLY, outside a transaction, so that an existing deployment keeps accepting
 * runs while they build.
 */
export class ListIndexes1763890000000 implements MigrationInterface {
  name = 'ListIndexes1763890000000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    const byValue = (name: string, column: string, where = '') =>
      q.query(
        `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON runs (team_id, ${column}, updated_at DESC, run_id DESC)${where}`,
      );
    await byValue('runs_team_state_updated', 'state');
    await byValue('runs_team_name_updated', 'name');
    await byValue('runs_team_model_updated', 'model_id');
    await byValue('runs_team_creator_updated', 'creator_uid');
    await byValue('runs_team_source_updated', 'source');
    await byValue('runs_team_environment_updated', 'environment_id');
    await byValue('runs_team_skill_updated', 'skill_spec', ' WHERE skill_spec IS NOT NULL');
    await byValue('runs_team_schedule_updated', `(schedule->>'schedule_id')`, ' WHERE schedule IS NOT NULL');
    // The time sorts carry the other time and the state, so that a range on it (with a state) is checked in the index.
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_updated_covering ON runs (team_id, updated_at DESC, run_id DESC) INCLUDE (created_at, state)`,
    );
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_created_covering ON runs (team_id, created_at DESC, run_id DESC) INCLUDE (updated_at, state)`,
    );
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_updated`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_created`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_team_state`);
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS runs_schedule`);
    for (const column of ['title', 'prompt', 'skill_spec']) {
      await q.query(
        `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_${column}_trgm ON runs USING gin (${column} gin_trgm_ops)`,
      );
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_updated ON runs (team_id, updated_at DESC, run_id DESC)`,
    );
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_created ON runs (team_id, created_at DESC, run_id DESC)`,
    );
    for (const name of [
      'runs_team_updated_covering',
      'runs_team_created_covering',
      'runs_team_state_updated',
      'runs_team_name_updated',
      'runs_team_model_updated',
      'runs_team_creator_updated',
      'runs_team_source_updated',
      'runs_team_environment_updated',
      'runs_team_skill_updated',
      'runs_team_schedule_updated',
      'runs_title_trgm',
      'runs_prompt_trgm',
      'runs_skill_spec_trgm',
    ]) {
      await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
    }
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_team_state ON runs (team_id, state)`);
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_schedule ON runs (team_id, (schedule->>'schedule_id')) WHERE schedule IS NOT NULL`,
    );
  }
}
