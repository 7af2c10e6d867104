import { signedDownloadUrl, type DownloadKind, type UrlSigner } from '../../core/signed-urls';
import type { FileArtifact, RunArtifact } from '../../db/artifact-reads';
import type { HandoffAttachment } from '../../db/attachment-reads';
import type { PlanArtifact } from '../../db/plan-reads';

/** The MIME type of a plan's `content`. */
export const PLAN_CONTENT_TYPE = 'text/markdown' as const;

/** A signed URL that downloads `id` (of `kind`) without a key until the signer's TTL passes. */
export function signedUrl(signer: UrlSigner, kind: DownloadKind, id: string): string {
  return signedDownloadUrl(signer.publicUrl, signer.keys, kind, id, signer.ttlSeconds).url;
}

/**
 * An artifact as a run's `artifacts` list shows it (`ArtifactItem` of the clients): a `FILE`, a
 * `PLAN` (one per version; this service has no Warp Drive notebook, so the plan document is its
 * own `notebook_uid`) or an `EXTERNAL_REFERENCE`.
 */
export function toArtifactItem(a: RunArtifact) {
  if (a.kind === 'PLAN') {
    return {
      artifact_type: 'PLAN' as const,
      created_at: a.createdAt.toISOString(),
      data: {
        document_uid: a.documentUid,
        artifact_uid: a.artifactUid,
        notebook_uid: a.documentUid,
        title: a.title,
        version: a.version,
      },
    };
  }
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

/** `GET /agent/artifacts/{uid}` of a plan version: its markdown inline, as the clients' `PlanArtifactResponse` has it. */
export function toPlanResponse(a: PlanArtifact) {
  return {
    artifact_type: 'PLAN' as const,
    artifact_uid: a.artifactUid,
    created_at: a.createdAt.toISOString(),
    data: {
      content: a.markdown,
      content_type: PLAN_CONTENT_TYPE,
      document_uid: a.documentUid,
      notebook_uid: a.documentUid,
      title: a.title,
      version: a.version,
    },
  };
}

/** `GET /agent/artifacts/{uid}` of a file: the artifact with a signed, expiring `download_url`. */
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
