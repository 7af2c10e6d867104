import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isSessionId } from '../../core/ids';
import type { Run } from '../../db/rows/run';
import { loadPendingFollowupsPage } from '../../db/followup-queries';
import { hasRunEvents, loadRunEventsPage } from '../../db/run-events';
import { childRunStatuses } from '../../db/run-lineage';
import { findRun, findRunBySession } from '../../db/run-queries';
import { notFound } from '../../core/api-error';
import { RUN_EVENT_KINDS, type RunEventStreams } from '../run-event-stream';
import { serveRunTranscript } from '../run-transcript-stream';
import { maskSecrets, runSecretValues } from '../../core/run-secrets';
import { SESSION_LIVE_SCRIPT } from '../session-live-script';
import { renderSessionPage, renderTranscriptEvent } from '../session-page';
import { parseSessionPageQuery } from '../session-page-query';

/** Events per transcript page: a long run's page stays quick to read from the database and to render. */
export const SESSION_PAGE_EVENTS = 500;

/** Scripts and the event stream of the service itself; nothing else. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'";

/**
 * `GET /sessions/{session_id}`: the session id is the capability; no key is needed. Without
 * `after`/`before` the page shows the newest events: a reader opens the link to see what a run
 * is doing now or how it ended, and that page follows the run live through
 * `GET /sessions/{session_id}/events`, the run's event stream with each event's HTML added.
 */
export function createSessionRouter({
  dataSource,
  secretsKey,
  streams,
}: {
  dataSource: DataSource;
  secretsKey: Buffer;
  streams: RunEventStreams;
}): Router {
  const router = new Router();
  const manager = dataSource.manager;
  const findSession = async (sessionId: string): Promise<Run> => {
    const run = isSessionId(sessionId) ? await findRunBySession(manager, sessionId) : null;
    if (!run) throw notFound('No such session.');
    return run;
  };

  // Before `/sessions/:sessionId`, which would otherwise answer it; a session id has no dot.
  router.get('/sessions/live.js', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = SESSION_LIVE_SCRIPT;
  });

  router.get('/sessions/:sessionId', async (ctx) => {
    const range = parseSessionPageQuery(ctx.query);
    const run = await findSession(ctx.params.sessionId!);
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
    ctx.set('Content-Security-Policy', PAGE_CSP);
    ctx.type = 'text/html; charset=utf-8';
    const parent = run.parentRunId ? await findRun(manager, run.parentRunId, run.teamId) : null;
    ctx.body = renderSessionPage(
      run,
      {
        events: maskSecrets(events, secrets),
        pending: maskSecrets(pending, secrets),
        earlier,
        later,
        startAfter: 'afterId' in range ? range.afterId : '0',
      },
      {
        parent: parent && { sessionId: parent.sessionId, title: parent.title },
        children: await childRunStatuses(manager, run.runId),
      },
      { kinds: RUN_EVENT_KINDS },
    );
  });

  // The run's event stream as the API serves it, each event with `html`: how the page shows it.
  router.get('/sessions/:sessionId/events', async (ctx) => {
    await serveRunTranscript(ctx, streams, {
      secretsKey,
      loadRun: () => findSession(ctx.params.sessionId!),
      decorate: async (run, batch) => {
        // Only a dispatching tool call shows its child's state.
        const children = batch.some((e) => e.kind === 'tool_call' && e.payload.child_run_id !== undefined)
          ? await childRunStatuses(manager, run.runId)
          : [];
        return (e) => ({ html: renderTranscriptEvent(e, { parent: null, children }) });
      },
    });
  });
  return router;
}
