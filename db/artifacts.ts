import type { DataSource } from 'typeorm';
import { storableText } from './storable';
import { newUuidV7 } from '../core/ids';
import type { BlobStore } from './blob-store';
import { type FileArtifact, COLUMNS, toArtifact } from './artifact-reads';

/** A file of a run's workspace, as the agent uploads it. */
export interface ArtifactFile {
  filepath: string;
  filename: string;
  mimeType: string;
  description?: string;
  title?: string;
  bytes: Buffer;
}

/**
 * Records a `FILE` artifact of a run once per tool call: the same `toolCallKey` again (a retried
 * step) returns the artifact recorded the first time and stores nothing new.
 */
export async function recordFileArtifact(
  dataSource: DataSource,
  blobs: BlobStore,
  input: ArtifactFile & { runId: string; toolCallKey: string },
): Promise<FileArtifact> {
  // The bytes first, outside the transaction: its row then commits with the artifact's, or neither does.
  const stored = await blobs.store(input.bytes);
  return dataSource.transaction(async (tx) => {
    const blobId = await blobs.record(tx, input.runId, stored);
    const inserted = (await tx.query(
      `INSERT INTO artifacts (artifact_uid, run_id, team_id, tool_call_key, artifact_type, filepath, filename,
                              mime_type, description, title, size_bytes, blob_id)
       SELECT $1, r.run_id, r.team_id, $3, 'FILE', $4, $5, $6, $7, $8, $9, $10 FROM runs r WHERE r.run_id = $2
       ON CONFLICT (run_id, tool_call_key) DO NOTHING
       RETURNING ${COLUMNS}`,
      [
        newUuidV7(),
        input.runId,
        input.toolCallKey,
        storableText(input.filepath),
        storableText(input.filename),
        input.mimeType,
        input.description === undefined ? null : storableText(input.description),
        input.title === undefined ? null : storableText(input.title),
        input.bytes.length,
        blobId,
      ],
    )) as Record<string, unknown>[];
    if (inserted[0]) return toArtifact(inserted[0]);
    // Recorded by an earlier attempt of this step: keep that one, drop the blob just recorded.
    await tx.query(`DELETE FROM blobs WHERE blob_id = $1`, [blobId]);
    const [existing] = (await tx.query(`SELECT ${COLUMNS} FROM artifacts WHERE run_id = $1 AND tool_call_key = $2`, [
      input.runId,
      input.toolCallKey,
    ])) as Record<string, unknown>[];
    return toArtifact(existing!);
  });
}
