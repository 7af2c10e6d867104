import type { DataSource, EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import type { BlobStore, StoredBytes } from './blob-store';
import { type FileContent } from './attachment-reads';

/** Stores the attachments a run was created with, in the creating transaction. */
export async function recordRunAttachments(
  tx: EntityManager,
  blobs: BlobStore,
  runId: string,
  attachments: FileContent[],
): Promise<void> {
  for (const [position, a] of attachments.entries()) {
    const blobId = await blobs.put(tx, runId, a.bytes);
    await tx.query(
      `INSERT INTO run_attachments (run_id, position, file_name, mime_type, size_bytes, blob_id)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [runId, position, a.fileName, a.mimeType, a.bytes.length, blobId],
    );
  }
}

/**
 * Makes `files` the handoff files of the run's turn `turn`, replacing what that turn recorded
 * before (a retried or continued step recomputes them) and those of earlier turns, which no
 * later listing shows.
 */
export async function replaceHandoffAttachments(
  dataSource: DataSource,
  blobs: BlobStore,
  runId: string,
  turn: number,
  files: FileContent[],
): Promise<void> {
  // The bytes first, outside the transaction: the rows then commit together, or none does.
  const stored: StoredBytes[] = [];
  for (const file of files) stored.push(await blobs.store(file.bytes));
  await dataSource.transaction(async (tx) => {
    await tx.query(
      `DELETE FROM blobs WHERE blob_id IN (SELECT blob_id FROM handoff_attachments WHERE run_id = $1 AND turn <= $2)`,
      [runId, turn],
    );
    for (const [i, file] of files.entries()) {
      const blobId = await blobs.record(tx, runId, stored[i]!);
      await tx.query(
        `INSERT INTO handoff_attachments (attachment_id, run_id, turn, filename, mime_type, size_bytes, blob_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [newUuidV7(), runId, turn, file.fileName, file.mimeType, file.bytes.length, blobId],
      );
    }
  });
}
