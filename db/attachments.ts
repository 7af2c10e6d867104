import type { DataSource, EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import type { BlobStore, StoredBytes } from './blob-store';

export interface FileContent {
  fileName: string;
  mimeType: string;
  bytes: Buffer;
}

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

/** The attachments of a run with their bytes, in request order. */
export async function loadRunAttachments(
  manager: EntityManager,
  blobs: BlobStore,
  runId: string,
): Promise<FileContent[]> {
  const rows = (await manager.query(
    `SELECT file_name, mime_type, blob_id FROM run_attachments WHERE run_id = $1 ORDER BY position`,
    [runId],
  )) as { file_name: string; mime_type: string; blob_id: string }[];
  const files: FileContent[] = [];
  for (const r of rows) {
    const bytes = await blobs.get(manager, r.blob_id);
    if (!bytes) throw new Error(`the bytes of attachment ${r.file_name} of run ${runId} are no longer stored`);
    files.push({ fileName: r.file_name, mimeType: r.mime_type, bytes });
  }
  return files;
}

export interface HandoffAttachment {
  attachmentId: string;
  runId: string;
  turn: number;
  filename: string;
  mimeType: string;
  sizeBytes: number;
  blobId: string;
}

const HANDOFF_COLUMNS = `attachment_id, run_id, turn, filename, mime_type, size_bytes, blob_id`;

function toHandoff(row: Record<string, unknown>): HandoffAttachment {
  return {
    attachmentId: row.attachment_id as string,
    runId: row.run_id as string,
    turn: row.turn as number,
    filename: row.filename as string,
    mimeType: row.mime_type as string,
    sizeBytes: Number(row.size_bytes),
    blobId: row.blob_id as string,
  };
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

/** The handoff files a turn of a run recorded, by name. */
export async function handoffAttachmentsOfTurn(
  manager: EntityManager,
  runId: string,
  turn: number,
): Promise<HandoffAttachment[]> {
  const rows = (await manager.query(
    `SELECT ${HANDOFF_COLUMNS} FROM handoff_attachments WHERE run_id = $1 AND turn = $2 ORDER BY filename`,
    [runId, turn],
  )) as Record<string, unknown>[];
  return rows.map(toHandoff);
}

export async function findHandoffAttachment(
  manager: EntityManager,
  attachmentId: string,
): Promise<HandoffAttachment | null> {
  const rows = (await manager.query(`SELECT ${HANDOFF_COLUMNS} FROM handoff_attachments WHERE attachment_id = $1`, [
    attachmentId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toHandoff(rows[0]) : null;
}
