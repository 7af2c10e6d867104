import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deleting runs deletes their checkpoints and files by cascade, and each deleted checkpoint or
 * blob makes PostgreSQL look for the rows that name it: checkpoints by `parent_id`, artifacts,
 * attachments and handoff files by `blob_id`. Without an index that is a scan of the whole table
 * for every row deleted (retention of 100,000 runs: hours). Built CONCURRENTLY, outside a
 * transaction, so that a deployment keeps accepting runs while they build.
 */
export class DeletionIndexes1763978600000 implements MigrationInterface {
  name = 'DeletionIndexes1763978600000';
  transaction = false;

  public async up(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${index}`);
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${index.split(' ')[0]}`);
  }
}

const INDEXES = [
  'checkpoints_parent ON checkpoints (parent_id) WHERE parent_id IS NOT NULL',
  'artifacts_blob ON artifacts (blob_id)',
  'run_attachments_blob ON run_attachments (blob_id)',
  'handoff_attachments_blob ON handoff_attachments (blob_id)',
];
