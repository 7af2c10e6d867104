import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index per sort of every resource list (environments, agent identities, schedules) that
 * holds the tie-breaker too, so that a page reads just its rows (db/keyset-reads.ts); and the
 * runs of a skill by creation, for `GET /agent`'s `last_run_timestamp`. Factories and webhooks
 * have theirs already. Built CONCURRENTLY, outside a transaction, as in ListIndexes1763890000000.
 */
export class ResourceListIndexes1763910000000 implements MigrationInterface {
  name = 'ResourceListIndexes1763910000000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    // Microseconds: the agents a FACTORY.md defines are created within a millisecond, and listed in creation order.
    await q.query(`ALTER TABLE agent_identities ALTER COLUMN created_at TYPE timestamptz`);
    const create = (sql: string) => q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${sql}`);
    await create(`environments_team_name ON environments (team_id, name COLLATE "C", uid) WHERE deleted_at IS NULL`);
    await create(
      `environments_team_last_updated ON environments (team_id, last_updated DESC, uid DESC) WHERE deleted_at IS NULL`,
    );
    await create(`agent_identities_team_created ON agent_identities (team_id, created_at, uid)`);
    await create(
      `agent_identities_factory_created ON agent_identities (team_id, factory_uid, created_at, uid) WHERE factory_uid IS NOT NULL`,
    );
    await create(`schedules_team_created ON schedules (team_id, created_at DESC, schedule_id DESC)`);
    await create(`runs_team_skill_created ON runs (team_id, skill_spec, created_at DESC) WHERE skill_spec IS NOT NULL`);
    for (const old of ['environments_team', 'agent_identities_factory', 'schedules_team']) {
      await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${old}`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agent_identities ALTER COLUMN created_at TYPE timestamptz(3)`);
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS environments_team ON environments (team_id, last_updated DESC)`,
    );
    await q.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS agent_identities_factory ON agent_identities (team_id, factory_uid)`,
    );
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS schedules_team ON schedules (team_id, created_at DESC)`);
    for (const index of [
      'environments_team_name',
      'environments_team_last_updated',
      'agent_identities_team_created',
      'agent_identities_factory_created',
      'schedules_team_created',
      'runs_team_skill_created',
    ]) {
      await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`);
    }
  }
}
