import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The bytes of runs' files move to the object store (infra/object-store): a blob names its
 * object's key, and new rows have no `content`. Rows written before keep their `content` and are
 * read from it; each row has one or the other. Keys are indexed for the object store's collector,
 * which keeps the objects some row names.
 */
export class BlobObjects1763971000000 implements MigrationInterface {
  name = 'BlobObjects1763971000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE blobs ALTER COLUMN content DROP NOT NULL`);
    await q.query(`ALTER TABLE blobs ADD COLUMN object_key text`);
    await q.query(
      `ALTER TABLE blobs ADD CONSTRAINT blobs_bytes_kept CHECK (object_key IS NOT NULL OR content IS NOT NULL)`,
    );
    await q.query(`CREATE INDEX blobs_object_key ON blobs (object_key) WHERE object_key IS NOT NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    const [{ n }] = (await q.query(`SELECT count(*)::int AS n FROM blobs WHERE content IS NULL`)) as [{ n: number }];
    if (n > 0) {
      throw new Error(
        `${n} blob(s) have their bytes only in the object store: copy them into blobs.content before going back`,
      );
    }
    await q.query(`DROP INDEX blobs_object_key`);
    await q.query(`ALTER TABLE blobs DROP CONSTRAINT blobs_bytes_kept`);
    await q.query(`ALTER TABLE blobs DROP COLUMN object_key`);
    await q.query(`ALTER TABLE blobs ALTER COLUMN content SET NOT NULL`);
  }
}
