import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The object collector's marks (services/objects/object-collection.ts): an object of the store
 * that no row named when the collector saw it, and when. One that is still named by nothing a
 * grace period later is deleted; a row that names it meanwhile (a checkpoint that reused it)
 * saves it.
 */
export class UnreferencedObjects1763974000000 implements MigrationInterface {
  name = 'UnreferencedObjects1763974000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE unreferenced_objects (object_key text PRIMARY KEY, seen_at timestamptz NOT NULL)`);
    // Where the collector goes on (a partition, 0-255, of the keys' first two hex digits), and what
    // the cycle in progress and the last whole one counted.
    await q.query(`
      CREATE TABLE object_collector (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        next_partition integer NOT NULL DEFAULT 0,
        cycle_objects bigint NOT NULL DEFAULT 0,
        cycle_bytes bigint NOT NULL DEFAULT 0,
        last_objects bigint,
        last_bytes bigint
      )`);
    await q.query(`INSERT INTO object_collector DEFAULT VALUES`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE object_collector`);
    await q.query(`DROP TABLE unreferenced_objects`);
  }
}
