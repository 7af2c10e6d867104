import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { BlobReader } from './blob-reads';

/** Bytes written to the object store and not yet recorded: what a `blobs` row will say of them. */
export interface StoredBytes {
  objectKey: string;
  sizeBytes: number;
  sha256: string;
}

/**
 * The bytes of a run's files (artifacts, attachments, handoff patches, harnesses' raw event logs):
 * in the object store under their content key (identical bytes are one object), described by a
 * `blobs` row of the run that the rows of those files name by id. PostgreSQL keeps no bytes:
 * only rows written before the object store (migration BlobObjects1763971000000) still have
 * their `content`, and are read from there.
 *
 * The object goes first, then the row in the caller's transaction: a step retried after either
 * finds the object there (writing it again is harmless) and records the row once. An object whose
 * row never committed, or whose rows are all gone (a replaced handoff patch, a deleted run), is
 * garbage for the store's collector; objects are never deleted here, as another row may share them.
 * The implementation: infra/object-store/object-blob-store.ts.
 */
export interface BlobStore extends BlobReader {
  /** Writes `bytes` to the object store (before the transaction that records them). */
  store(bytes: Buffer): Promise<StoredBytes>;
  /** Records stored bytes as a blob of `runId` inside the caller's transaction; returns its id. */
  record(tx: EntityManager, runId: string, stored: StoredBytes): Promise<string>;
  /** store, then record in `tx`: for a transaction already open when the bytes come. */
  put(tx: EntityManager, runId: string, bytes: Buffer): Promise<string>;
}

/** Records bytes already stored as a blob of `runId`; returns its id. */
export async function insertBlob(tx: EntityManager, runId: string, stored: StoredBytes): Promise<string> {
  const blobId = randomUUID();
  await tx.query(`INSERT INTO blobs (blob_id, run_id, size_bytes, sha256, object_key) VALUES ($1, $2, $3, $4, $5)`, [
    blobId,
    runId,
    stored.sizeBytes,
    stored.sha256,
    stored.objectKey,
  ]);
  return blobId;
}
