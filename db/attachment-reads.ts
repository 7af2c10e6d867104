import type { EntityManager } from 'typeorm';
import type { BlobReader } from './blob-reads';

export interface FileContent {
  fileName: string;
  mimeType: string;
  bytes: Buffer;
}

/** The attachments of a run with their bytes, in request order. */
export async function loadRunAttachments(
  manager: EntityManager,
  blobs: BlobReader,
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
