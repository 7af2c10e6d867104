import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isSessionId } from '../../core/ids';
import { loadRunEvents } from '../../db/run-events';
import { findRunBySession } from '../../db/run-queries';
import { pendingFollowups } from '../../db/run-store';
import { notFound } from '../api-error';
import { maskSecrets, runSecretValues } from '../run-secrets';
import { renderSessionPage } from '../session-page';

/** `GET /sessions/{session_id}`: the session id is the capability; no key is needed. */
export function createSessionRouter({
  dataSource,
  secretsKey,
}: {
  dataSource: DataSource;
  secretsKey: Buffer;
}): Router {
  const router = new Router();
  router.get('/sessions/:sessionId', async (ctx) => {
    const sessionId = ctx.params.sessionId!;
    const run = isSessionId(sessionId) ? await findRunBySession(dataSource.manager, sessionId) : null;
    if (!run) throw notFound('No such session.');
    // The page shows no config, but a worker may have recorded a credential echoed by an MCP server.
    const events = maskSecrets(
      await loadRunEvents(dataSource.manager, run.runId),
      runSecretValues(run.config, secretsKey),
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    ctx.type = 'text/html; charset=utf-8';
    const pending = maskSecrets(
      await pendingFollowups(dataSource.manager, run.runId),
      runSecretValues(run.config, secretsKey),
    );
    ctx.body = renderSessionPage(run, events, pending);
  });
  return router;
}
