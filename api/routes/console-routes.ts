import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../core/api-error';
import { isUuid } from '../../core/ids';
import { loadConsoleAssets } from '../console/console-assets';
import { agentsPage, runPage, runsPage, schedulesPage, signInPage } from '../console/console-pages';

/**
 * What the console's pages may do: run the service's own modules and style sheet, talk to the
 * service's API, and nothing else. No inline script or style, no forms submitted by the browser
 * (the modules send them), no framing; Trusted Types with no policy make the DOM's HTML sinks
 * (innerHTML and the like) throw, so nothing can turn text a run wrote into markup.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const PAGE_HEADERS = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

function html(ctx: Context, body: string): void {
  ctx.set(PAGE_HEADERS);
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
}

/**
 * `/console`: the web console, pages for people over the public API. Each page is a shell the
 * server renders (no data in it, so it needs no key) and one of the console's ES modules, which
 * reads the API with the key the person signed in with, kept in the tab's sessionStorage.
 */
export function createConsoleRouter(): Router {
  const assets = loadConsoleAssets();
  const pages = { signIn: signInPage(), runs: runsPage(), schedules: schedulesPage(), agents: agentsPage() };
  const router = new Router();

  // Relative, so that a proxy's path prefix is kept.
  router.get('/console', (ctx) => ctx.redirect('console/runs'));
  router.get('/console/sign-in', (ctx) => html(ctx, pages.signIn));
  router.get('/console/runs', (ctx) => html(ctx, pages.runs));
  router.get('/console/schedules', (ctx) => html(ctx, pages.schedules));
  router.get('/console/agents', (ctx) => html(ctx, pages.agents));
  router.get('/console/runs/:runId', (ctx) => {
    const runId = ctx.params.runId!;
    if (!isUuid(runId)) throw notFound(`No run ${runId}.`);
    // Whether the run exists, and is the reader's, is the API's to say to the key.
    html(ctx, runPage(runId));
  });

  const serve = (ctx: Context, name: string) => {
    const file = assets.get(name);
    if (!file) throw notFound(`No console file ${name}.`);
    ctx.set({ 'Cache-Control': 'no-cache', ETag: file.etag, 'X-Content-Type-Options': 'nosniff' });
    ctx.type = file.type;
    if (ctx.get('If-None-Match') === file.etag) {
      ctx.status = 304;
      return;
    }
    ctx.body = file.body;
  };
  router.get('/console/assets/vendor/eventsource-parser/:file', (ctx) =>
    serve(ctx, `vendor/eventsource-parser/${ctx.params.file}`),
  );
  router.get('/console/assets/:file', (ctx) => serve(ctx, ctx.params.file!));
  return router;
}
