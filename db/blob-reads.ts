import type { Readable } from 'node:stream';
import type { EntityManager } from 'typeorm';

/** Reads the bytes of a run's files: the reading half of the blob store (db/blob-store.ts). */
export interface BlobReader {
  /** The bytes of a blob, or null when there is none (or its object is gone). */
  get(manager: EntityManager, blobId: string): Promise<Buffer | null>;
  /** The bytes of a blob as a stream, or null when there is none (or its object is gone). */
  getStream(manager: EntityManager, blobId: string): Promise<Readable | null>;
}

/** Where a blob's bytes are: an object, or (rows from before the object store) its `content`. */
export interface BlobLocation {
  objectKey: string | null;
  content: Buffer | null;
}

/** Where the bytes of a blob are, or undefined when there is no such blob. */
export async function findBlobLocation(manager: EntityManager, blobId: string): Promise<BlobLocation | undefined> {
  const rows = (await manager.query(`SELECT object_key, content FROM blobs WHERE blob_id = $1`, [blobId])) as {
    object_key: string | null;
    content: Buffer | null;
  }[];
  return rows[0] && { objectKey: rows[0].object_key, content: rows[0].content };
}
