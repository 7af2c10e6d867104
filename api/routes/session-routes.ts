import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isSessionId } from '../../core/ids';
import { loadPendingFollowupsPage } from '../../db/followup-queries';
import { hasRunEvents, loadRunEventsPage } from '../../db/run-events';
import { childRunStatuses } from '../../db/run-lineage';
import { findRun, findRunBySession } from '../../db/run-queries';
import { notFound } from '../api-error';
import { maskSecrets, runSecretValues } from '../run-secrets';
import { renderSessionPage } from '../session-page';
import { parseSessionPageQuery } from '../session-page-query';

/** Events per transcript page: a long run's page stays quick to read from the database and to render. */
export const SESSION_PAGE_EVENTS = 500;

/**
 * `GET /sessions/{session_id}`: the session id is the capability; no key is needed. Without
 * `after`/`before` the page shows the newest events: a reader opens the link to see what a run
 * is doing now or how it ended, and only that page can follow a live run by refreshing.
 */
export function createSessionRouter({
  dataSource,
  secretsKey,
}: {
  dataSource: DataSource;
  secretsKey: Buffer;
}): Router {
  const router = new Router();
  router.get('/sessions/:sessionId', async (ctx) => {
    const range = parseSessionPageQuery(ctx.query);
    const sessionId = ctx.params.sessionId!;
    const manager = dataSource.manager;
    const run = isSessionId(sessionId) ? await findRunBySession(manager, sessionId) : null;
    if (!run) throw notFound('No such session.');
    const { events, hasMore } = await loadRunEventsPage(manager, run.runId, { ...range, limit: SESSION_PAGE_EVENTS });
    const earlier = 'afterId' in range ? await hasRunEvents(manager, run.runId, { idAtMost: range.afterId }) : hasMore;
    const later =
      'afterId' in range
        ? hasMore
        : 'beforeId' in range && (await hasRunEvents(manager, run.runId, { idAtLeast: range.beforeId }));
    const pending = later
      ? []
      : await loadPendingFollowupsPage(manager, run.runId, { afterSeq: 0, limit: SESSION_PAGE_EVENTS });
    // The page shows no config, but a worker may have recorded a credential echoed by an MCP server.
    const secrets = runSecretValues(run.config, secretsKey);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    ctx.type = 'text/html; charset=utf-8';
    const parent = run.parentRunId ? await findRun(manager, run.parentRunId, run.teamId) : null;
    ctx.body = renderSessionPage(
      run,
      { events: maskSecrets(events, secrets), pending: maskSecrets(pending, secrets), earlier, later },
      {
        parent: parent && { sessionId: parent.sessionId, title: parent.title },
        children: await childRunStatuses(manager, run.runId),
      },
    );
  });
  return router;
}
