import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Workers renew a lease here; a run's workspace counts as lost only when its worker's lease lapses. */
export class WorkerLeases1763800000000 implements MigrationInterface {
  name = 'WorkerLeases1763800000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE worker_leases (
        workspace_queue text PRIMARY KEY,
        renewed_at timestamptz(3) NOT NULL,
        capacity integer NOT NULL,
        in_use integer NOT NULL,
        lease_seconds integer NOT NULL
      )`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE worker_leases`);
  }
}
