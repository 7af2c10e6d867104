import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isSessionId } from '../../core/ids';
import type { Run } from '../../db/rows/run';
import { loadPendingFollowupsPage } from '../../db/followup-reads';
import { hasRunEvents, loadRunEventsPage } from '../../db/run-event-reads';
import { childRunStatuses } from '../../db/run-lineage-reads';
import { findRun, findRunBySession } from '../../db/run-reads';
import { ApiError, notFound } from '../../core/api-error';
import { checkUrlSignature, signedQuery, type UrlSigner } from '../../core/signed-urls';
import { RUN_EVENT_KINDS, type RunEventStreams } from '../run-event-stream';
import { serveRunTranscript } from '../run-transcript-stream';
import { maskSecrets, runSecretValues } from '../../core/run-secrets';
import { SESSION_LIVE_SCRIPT } from '../session-live-script';
import { renderSessionPage, renderTranscriptEvent, type RunFamily } from '../session-page';
import { renderSessionLinkRefused, sessionLinkRefusal } from '../session-link-refusal';
import { parseSessionPageQuery } from '../session-page-query';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** Events per transcript page: a long run's page stays quick to read from the database and to render. */
export const SESSION_PAGE_EVENTS = 500;

/** Scripts and the event stream of the service itself; nothing else. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'";

/**
 * `GET /sessions/{session_id}?expires=…&signature=…`: a run's `session_link`, whose signature is
 * the capability (no key is needed, and the session id alone opens nothing); it is checked before
 * anything is looked up, so a missing session and another team's are refused alike. Without
 * `after`/`before` the page shows the newest events: a reader opens the link to see what a run
 * is doing now or how it ended, and that page follows the run live through
 * `GET /sessions/{session_id}/events`, the run's event stream with each event's HTML added, opened
 * with the same signed query.
 */
export function createSessionRouter({
  dataSource,
  secretsKeyring,
  streams,
  sessionLinks,
}: {
  dataSource: DataSource;
  secretsKeyring: SecretsKeyring;
  streams: RunEventStreams;
  sessionLinks: UrlSigner;
}): Router {
  const router = new Router();
  const manager = dataSource.manager;
  const findSession = async (sessionId: string): Promise<Run> => {
    const run = isSessionId(sessionId) ? await findRunBySession(manager, sessionId) : null;
    if (!run) throw notFound('No such session.');
    return run;
  };
  const checkLink = (sessionId: string, query: Record<string, unknown>) =>
    checkUrlSignature(sessionLinks.keys, 'sessions', sessionId, query.expires, query.signature);
  /** Links between transcript pages open until the moment the link they are reached from does. */
  const access = (sessionId: string, expires: number) => signedQuery(sessionLinks.keys, 'sessions', sessionId, expires);

  // Before `/sessions/:sessionId`, which would otherwise answer it; a session id has no dot.
  router.get('/sessions/live.js', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = SESSION_LIVE_SCRIPT;
  });

  router.get('/sessions/:sessionId', async (ctx) => {
    const link = checkLink(ctx.params.sessionId!, ctx.query);
    ctx.set('Cache-Control', 'no-store');
    if (!link.ok) {
      ctx.status = 403;
      ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = renderSessionLinkRefused(link, sessionLinks.ttlSeconds);
      return;
    }
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
    const secrets = runSecretValues(run.config, secretsKeyring);
    ctx.set('Content-Security-Policy', PAGE_CSP);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = renderSessionPage(
      run,
      {
        events: maskSecrets(events, secrets),
        pending: maskSecrets(pending, secrets),
        earlier,
        later,
        startAfter: 'afterId' in range ? range.afterId : '0',
      },
      await familyOf(run, link.expires),
      { kinds: RUN_EVENT_KINDS },
      access(run.sessionId, link.expires),
    );
  });

  // The run's event stream as the API serves it, each event with `html`: how the page shows it.
  router.get('/sessions/:sessionId/events', async (ctx) => {
    const link = checkLink(ctx.params.sessionId!, ctx.query);
    if (!link.ok) throw new ApiError('not_authorized', sessionLinkRefusal(link, sessionLinks.ttlSeconds));
    await serveRunTranscript(ctx, streams, {
      secretsKeyring,
      loadRun: () => findSession(ctx.params.sessionId!),
      decorate: async (run, batch) => {
        // Only a dispatching tool call shows its child's state.
        const children = batch.some((e) => e.kind === 'tool_call' && e.payload.child_run_id !== undefined)
          ? (await familyOf(run, link.expires, { withParent: false })).children
          : [];
        return (e) => ({ html: renderTranscriptEvent(e, { parent: null, children }) });
      },
    });
  });

  /** The run's parent and children, linked with signatures that end when `expires` does. */
  async function familyOf(run: Run, expires: number, { withParent = true } = {}): Promise<RunFamily> {
    const href = (sessionId: string) => `${sessionId}?${access(sessionId, expires)}`;
    const parent = withParent && run.parentRunId ? await findRun(manager, run.parentRunId, run.teamId) : null;
    const children = await childRunStatuses(manager, run.runId);
    return {
      parent: parent && { href: href(parent.sessionId), title: parent.title },
      children: children.map((c) => ({ ...c, href: href(c.sessionId) })),
    };
  }
  return router;
}
