import { signedDownloadUrl, type DownloadKind, type UrlSigner } from '../../core/signed-urls';
import type { FileArtifact, RunArtifact } from '../../db/artifact-reads';
import type { HandoffAttachment } from '../../db/attachment-reads';

/** A signed URL that downloads `id` (of `kind`) without a key until the signer's TTL passes. */
export function signedUrl(signer: UrlSigner, kind: DownloadKind, id: string): string {
  return signedDownloadUrl(signer.publicUrl, signer.keys, kind, id, signer.ttlSeconds).url;
}

/** An artifact as a run's `artifacts` list shows it (`ArtifactItem` of the clients): a `FILE` or an `EXTERNAL_REFERENCE`. */
export function toArtifactItem(a: RunArtifact) {
  if (a.kind === 'EXTERNAL_REFERENCE') {
    return {
      artifact_type: 'EXTERNAL_REFERENCE' as const,
      created_at: a.createdAt.toISOString(),
      data: { reference_type: a.referenceType, url: a.url, ...(a.title !== null ? { title: a.title } : {}) },
    };
  }
  return {
    artifact_type: 'FILE' as const,
    created_at: a.createdAt.toISOString(),
    data: {
      artifact_uid: a.artifactUid,
      filename: a.filename,
      filepath: a.filepath,
      mime_type: a.mimeType,
      size_bytes: a.sizeBytes,
      ...(a.description !== null ? { description: a.description } : {}),
      ...(a.title !== null ? { title: a.title } : {}),
    },
  };
}

/** `GET /agent/artifacts/{uid}`: the artifact with a signed, expiring `download_url`. */
export function toArtifactResponse(a: FileArtifact, signer: UrlSigner) {
  const { url, expiresAt } = signedDownloadUrl(
    signer.publicUrl,
    signer.keys,
    'artifacts',
    a.artifactUid,
    signer.ttlSeconds,
  );
  return {
    artifact_type: 'FILE' as const,
    artifact_uid: a.artifactUid,
    created_at: a.createdAt.toISOString(),
    data: {
      content_type: a.mimeType,
      download_url: url,
      expires_at: expiresAt.toISOString(),
      filename: a.filename,
      filepath: a.filepath,
      size_bytes: a.sizeBytes,
      ...(a.description !== null ? { description: a.description } : {}),
      ...(a.title !== null ? { title: a.title } : {}),
    },
  };
}

/** One file of `GET /agent/runs/{id}/handoff/attachments`. */
export function toHandoffItem(h: HandoffAttachment, signer: UrlSigner) {
  return {
    attachment_id: h.attachmentId,
    filename: h.filename,
    mime_type: h.mimeType,
    download_url: signedDownloadUrl(signer.publicUrl, signer.keys, 'handoff', h.attachmentId, signer.ttlSeconds).url,
  };
}
