import { signedDownloadUrl, type UrlSigner } from '../../core/signed-urls';
import type { CheckpointRow } from '../../db/checkpoint-reads';

/** A checkpoint as a run's list shows it. */
export function toCheckpointSummary(c: CheckpointRow) {
  return {
    checkpoint_id: c.checkpointId,
    turn: c.turn,
    step: c.step,
    created_at: c.createdAt.toISOString(),
    files: c.files,
    bytes: c.bytes,
    bytes_added: c.bytesAdded,
  };
}

/** `GET /agent/runs/{runId}/checkpoints/{checkpointId}`: with a signed, expiring download of its workspace. */
export function toCheckpointItem(c: CheckpointRow, signer: UrlSigner) {
  const { url, expiresAt } = signedDownloadUrl(
    signer.publicUrl,
    signer.keys,
    'checkpoints',
    c.checkpointId,
    signer.ttlSeconds,
  );
  return { ...toCheckpointSummary(c), download_url: url, expires_at: expiresAt.toISOString() };
}
