import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isSessionId, isUuid } from '../../core/ids';
import { conversationOfSession, latestSessionOfConversation } from '../../db/session-redirect-reads';
import { notFound } from '../../core/api-error';
import { rejectQueryParameters } from '../validate';

/**
 * The clients' redirect checks, which they make without a key. Each answers an id with another
 * id, and ids open nothing: a transcript page needs the signature of its `session_link`, which
 * only a read of the run with a key of its team gives (api/routes/session-routes.ts); every
 * other route that shows a team's data needs that key or a signed URL. Unknown ids are 404.
 */
export function createRedirectRouter({ dataSource }: { dataSource: DataSource }): Router {
  const router = new Router({ prefix: '/api/v1' });
  router.get('/agent/sessions/:sessionId/redirect', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const sessionId = ctx.params.sessionId!;
    const conversationId = isSessionId(sessionId) ? await conversationOfSession(dataSource.manager, sessionId) : null;
    if (!conversationId) throw notFound('No such session.');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { conversation_id: conversationId };
  });
  router.get('/agent/conversations/:conversationId/redirect', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const conversationId = ctx.params.conversationId!;
    const sessionId = isUuid(conversationId)
      ? await latestSessionOfConversation(dataSource.manager, conversationId)
      : null;
    if (!sessionId) throw notFound('No such conversation.');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { session_id: sessionId };
  });
  return router;
}
