import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { signedUrl } from '../../services/views/artifact-views';
import type { UrlSigner } from '../../core/signed-urls';
import { principalOf } from '../middleware/auth';
import { teamConversationRunsOr404, teamRunOr404 } from '../team-runs';
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
  downloads: UrlSigner;
}): Router {
  const router = new Router();
  router.get('/agent/runs/:runId/transcript', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const run = await teamRunOr404(dataSource.manager, ctx.params.runId!, principalOf(ctx.state).teamId);
    ctx.redirect(signedUrl(downloads, 'transcripts', run.runId));
  });
  router.get('/agent/conversations/:conversationId/transcript', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const conversationId = ctx.params.conversationId!;
    await teamConversationRunsOr404(dataSource.manager, conversationId, principalOf(ctx.state).teamId);
    ctx.redirect(signedUrl(downloads, 'conversation-transcripts', conversationId));
  });
  return router;
}
