import { signedDownloadUrl, type DownloadKind, type UrlSigner } from '../../core/signed-urls';
import type { FileArtifact, RunArtifact } from '../../db/artifact-reads';
import type { HandoffAttachment } from '../../db/attachment-reads';
import type { PlanArtifact } from '../../db/plan-reads';
import type { PullRequestArtifact } from '../../db/pull-request-reads';

/** The MIME type of a plan's `content`. */
export const PLAN_CONTENT_TYPE = 'text/markdown' as const;

/** A signed URL that downloads `id` (of `kind`) without a key until the signer's TTL passes. */
export function signedUrl(signer: UrlSigner, kind: DownloadKind, id: string): string {
  return signedDownloadUrl(signer.publicUrl, signer.keys, kind, id, signer.ttlSeconds).url;
}

/**
 * An artifact as a run's `artifacts` list shows it (`ArtifactItem` of the clients): a `FILE`, a
 * `PLAN` (one per version; this service has no Warp Drive notebook, so the plan document is its
 * own `notebook_uid`), a `PULL_REQUEST` or an `EXTERNAL_REFERENCE`.
 */
export function toArtifactItem(a: RunArtifact) {
  if (a.kind === 'PULL_REQUEST') {
    return { artifact_type: 'PULL_REQUEST' as const, created_at: a.createdAt.toISOString(), data: pullRequestData(a) };
  }
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

/**
 * A pull request's `data`: the clients' `branch`, `status` and `url`, and more they tolerate (their
 * models keep unknown fields): which repository, its number, the branch it merges into, when the
 * forge last said its status, and the artifact's uid.
 */
function pullRequestData(a: PullRequestArtifact) {
  return {
    branch: a.branch,
    status: a.status,
    url: a.url,
    artifact_uid: a.artifactUid,
    repository: a.repository,
    base: a.base,
    ...(a.number !== null ? { number: a.number } : {}),
    ...(a.statusCheckedAt ? { status_checked_at: a.statusCheckedAt.toISOString() } : {}),
  };
}

/**
 * `GET /agent/artifacts/{uid}` of a pull request. The clients define no answer for one (their
 * `AgentGetArtifactResponse` has plans, screenshots and files): this one is the list's item with
 * its `artifact_uid` beside, as the other answers have it.
 */
export function toPullRequestResponse(a: PullRequestArtifact) {
  return {
    artifact_type: 'PULL_REQUEST' as const,
    artifact_uid: a.artifactUid,
    created_at: a.createdAt.toISOString(),
    data: pullRequestData(a),
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
