import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { findRun, listConversationRuns } from '../../db/run-queries';
import { notFound } from '../../core/api-error';
import { signedUrl, type DownloadSigner } from '../../services/views/artifact-views';
import { principalOf } from '../middleware/auth';
import { rejectQueryParameters } from '../validate';

/**
 * `GET /agent/runs/{id}/transcript` and `GET /agent/conversations/{id}/transcript`: a redirect to
 * a signed, expiring download of the raw transcript (api/transcript-download.ts) of the run, or of
 * every run of the conversation in order.
 */
export function createTranscriptRouter({
  dataSource,
  downloads,
}: {
  dataSource: DataSource;
  downloads: DownloadSigner;
}): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/transcript', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const runId = ctx.params.runId!;
    const run = isUuid(runId) ? await findRun(dataSource.manager, runId, principalOf(ctx.state).teamId) : null;
    if (!run) throw notFound(`No run ${runId}.`);
    ctx.redirect(signedUrl(downloads, 'transcripts', run.runId));
  });
  router.get('/agent/conversations/:conversationId/transcript', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const conversationId = ctx.params.conversationId!;
    const runs = isUuid(conversationId)
      ? await listConversationRuns(dataSource.manager, conversationId, principalOf(ctx.state).teamId)
      : [];
    if (runs.length === 0) throw notFound(`No conversation ${conversationId}.`);
    ctx.redirect(signedUrl(downloads, 'conversation-transcripts', conversationId));
  });
  return router;
}
