import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { findBlobLocation } from '../../db/blob-reads';
import { insertBlob, type BlobStore } from '../../db/blob-store';
import { contentKeyOfDigest, type ObjectStore } from './object-store';

/**
 * The blob store of db/blob-store.ts over an object store: bytes under their content key (the
 * same bytes are one object however many blobs name them), rows in PostgreSQL; rows from before
 * the object store are read from their `content`.
 */
export function objectBlobStore(objects: ObjectStore): BlobStore {
  const blobs: BlobStore = {
    async store(bytes) {
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const objectKey = contentKeyOfDigest(sha256);
      // Written again even when it is there: its time is then new, which a collector that spares
      // recent objects (whose rows may not have committed yet) relies on.
      await objects.put(objectKey, bytes);
      return { objectKey, sizeBytes: bytes.length, sha256 };
    },
    record: insertBlob,
    async put(tx, runId, bytes) {
      return insertBlob(tx, runId, await blobs.store(bytes));
    },
    async get(manager, blobId) {
      const at = await findBlobLocation(manager, blobId);
      if (!at) return null;
      if (at.objectKey === null) return at.content;
      return (await objects.get(at.objectKey)) ?? null;
    },
    async getStream(manager, blobId) {
      const at = await findBlobLocation(manager, blobId);
      if (!at) return null;
      if (at.objectKey === null) return at.content ? Readable.from([at.content]) : null;
      return (await objects.getStream(at.objectKey)) ?? null;
    },
  };
  return blobs;
}
