import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';

/**
 * Where the bytes of a run's files (artifacts, attachments, handoff patches) are kept; the rows
 * that describe them refer to a blob by id. One small interface, so an object store can take
 * its place without touching the callers.
 *
 * This implementation keeps them in PostgreSQL (`bytea` in `blobs`): the API and the workers
 * may run on different machines with nothing shared but the database, the files are small
 * (every kind is size-limited, see docs/guide/results.md "Artifacts, attachments and handoff"), a blob is
 * written in the same transaction as the row that names it (so a retried step never leaves a
 * half-recorded artifact), and it is backed up and deleted with its run. Large objects would add
 * their own lifecycle (lo_unlink) for sizes bytea handles well; a blob directory would need a
 * volume shared by the API and every worker.
 */
export interface BlobStore {
  /** Stores `bytes` as a blob of `runId` inside the caller's transaction; returns its id. */
  put(tx: EntityManager, runId: string, bytes: Buffer): Promise<string>;
  /** The bytes of a blob, or null when there is none. */
  get(manager: EntityManager, blobId: string): Promise<Buffer | null>;
}

export const postgresBlobStore: BlobStore = {
  async put(tx, runId, bytes) {
    const blobId = randomUUID();
    await tx.query(`INSERT INTO blobs (blob_id, run_id, size_bytes, sha256, content) VALUES ($1, $2, $3, $4, $5)`, [
      blobId,
      runId,
      bytes.length,
      createHash('sha256').update(bytes).digest('hex'),
      bytes,
    ]);
    return blobId;
  },
  async get(manager, blobId) {
    const rows = (await manager.query(`SELECT content FROM blobs WHERE blob_id = $1`, [blobId])) as {
      content: Buffer;
    }[];
    return rows[0]?.content ?? null;
  },
};
