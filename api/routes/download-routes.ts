import Router, { type RouterContext } from '@koa/router';
import type { DataSource } from 'typeorm';
import { checkUrlSignature, type DownloadKind, type UrlSigningKeys } from '../../core/signed-urls';
import { isUuid } from '../../core/ids';
import { findArtifact } from '../../db/artifact-reads';
import { findHandoffAttachment } from '../../db/attachment-reads';
import { findRun, listConversationRunsUnscoped } from '../../db/run-reads';
import type { Run } from '../../db/rows/run';
import { transcriptJsonLines } from '../transcript-download';
import type { BlobReader } from '../../db/blob-reads';
import { ApiError, notFound } from '../../core/api-error';
import { rejectQueryParameters } from '../validate';
import { findCheckpointUnscoped } from '../../db/checkpoint-reads';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { checkpointArchive } from '../../services/checkpoints/checkpoint-download';
import type { SecretsKeyring } from '../../core/secrets-keyring';

const SAFE_MIME = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i;

/** `Content-Disposition: attachment` with an ASCII fallback and the UTF-8 name (RFC 6266). */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * `GET /downloads/{artifacts|handoff}/{id}?expires=…&signature=…`: outside authentication, the
 * signed URL is the capability (core/download-urls.ts). Served as a download that the browser
 * never renders on this origin, whatever the agent put in the file.
 */
export function createDownloadRouter({
  dataSource,
  blobs,
  objectStore,
  signingKeys,
  secretsKeyring,
}: {
  dataSource: DataSource;
  blobs: BlobReader;
  /** Where checkpoints' manifests and files are. */
  objectStore: ObjectStore;
  signingKeys: UrlSigningKeys;
  secretsKeyring: SecretsKeyring;
}): Router {
  const router = new Router();

  function assertSigned(ctx: RouterContext, kind: DownloadKind, id: string, fetchAgain: string): void {
    rejectQueryParameters(ctx.query, ['expires', 'signature']);
    const check = checkUrlSignature(signingKeys, kind, id, ctx.query.expires, ctx.query.signature);
    if (check.ok) return;
    if (check.reason === 'expired') {
      throw new ApiError(
        'not_authorized',
        `This download link expired at ${check.expiresAt!.toISOString()}; get a fresh one from ${fetchAgain}.`,
      );
    }
    throw new ApiError(
      'not_authorized',
      check.reason === 'malformed'
        ? 'This download link lacks a valid `expires` and `signature`; use the `download_url` exactly as the API returned it.'
        : `This download link's signature is not valid (the link was altered); get a fresh one from ${fetchAgain}.`,
    );
  }

  function sendTranscript(ctx: RouterContext, runs: Run[], filename: string): void {
    ctx.set('Content-Disposition', contentDisposition(filename));
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'application/x-ndjson';
    ctx.body = transcriptJsonLines(dataSource.manager, runs, secretsKeyring);
  }

  async function send(
    ctx: RouterContext,
    file: { blobId: string; sizeBytes: number; filename: string; mimeType: string },
  ): Promise<void> {
    const { filename, mimeType } = file;
    // Streamed from the object store: a large file never sits whole in the API's memory.
    const bytes = await blobs.getStream(dataSource.manager, file.blobId);
    if (!bytes) throw notFound('The file is no longer stored.');
    ctx.set('Content-Disposition', contentDisposition(filename));
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = SAFE_MIME.test(mimeType) ? mimeType : 'application/octet-stream';
    ctx.body = bytes;
    ctx.length = file.sizeBytes;
  }

  router.get('/downloads/artifacts/:id', async (ctx) => {
    const id = ctx.params.id!;
    assertSigned(ctx, 'artifacts', id, `GET /api/v1/agent/artifacts/${id}`);
    const artifact = isUuid(id) ? await findArtifact(dataSource.manager, id) : null;
    if (!artifact) throw notFound(`No artifact ${id}.`);
    await send(ctx, artifact);
  });

  router.get('/downloads/handoff/:id', async (ctx) => {
    const id = ctx.params.id!;
    assertSigned(ctx, 'handoff', id, 'GET /api/v1/agent/runs/{run_id}/handoff/attachments');
    const file = isUuid(id) ? await findHandoffAttachment(dataSource.manager, id) : null;
    if (!file) throw notFound(`No handoff attachment ${id}; a later turn of the run may have replaced it.`);
    await send(ctx, file);
  });

  router.get('/downloads/checkpoints/:id', async (ctx) => {
    const id = ctx.params.id!;
    assertSigned(ctx, 'checkpoints', id, 'GET /api/v1/agent/runs/{run_id}/checkpoints/{checkpoint_id}');
    const checkpoint = isUuid(id) ? await findCheckpointUnscoped(dataSource.manager, id) : undefined;
    if (!checkpoint) throw notFound(`No checkpoint ${id}; its run may have been deleted.`);
    const archive = await checkpointArchive(dataSource.manager, objectStore, checkpoint);
    ctx.set(
      'Content-Disposition',
      contentDisposition(`checkpoint-${checkpoint.runId}-t${checkpoint.turn}-s${checkpoint.step}.tar.gz`),
    );
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'application/gzip';
    ctx.body = archive;
  });

  router.get('/downloads/transcripts/:id', async (ctx) => {
    const id = ctx.params.id!;
    assertSigned(ctx, 'transcripts', id, `GET /api/v1/agent/runs/${id}/transcript`);
    const run = isUuid(id) ? await findRun(dataSource.manager, id) : null;
    if (!run) throw notFound(`No run ${id}.`);
    sendTranscript(ctx, [run], `transcript-${id}.jsonl`);
  });

  router.get('/downloads/conversation-transcripts/:id', async (ctx) => {
    const id = ctx.params.id!;
    assertSigned(ctx, 'conversation-transcripts', id, `GET /api/v1/agent/conversations/${id}/transcript`);
    const runs = isUuid(id) ? await listConversationRunsUnscoped(dataSource.manager, id) : [];
    if (runs.length === 0) throw notFound(`No conversation ${id}.`);
    sendTranscript(ctx, runs, `conversation-${id}.jsonl`);
  });

  return router;
}
