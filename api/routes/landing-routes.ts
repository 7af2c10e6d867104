import Router from '@koa/router';
import { escapeHtml, page } from '../html';
import { OPENAPI_PATH } from './openapi-routes';

export interface LandingLinks {
  /** The Temporal UI, when this deployment has one to show. */
  temporalUiUrl?: string;
}

/** `GET /`: where a newcomer's browser lands: what this is, and the links that matter. */
export function createLandingRouter({ temporalUiUrl }: LandingLinks): Router {
  const links: [string, string, string][] = [
    ['/console', 'Web console', "the team's runs: watch one live, follow up, cancel, approve, fork"],
    ['/docs', 'API reference', 'every endpoint, with a form to try it'],
    [OPENAPI_PATH, 'OpenAPI document', 'for client generators and tools'],
    ...(temporalUiUrl
      ? [[temporalUiUrl, 'Temporal UI', "each run's workflow, its history and activities"] as [string, string, string]]
      : []),
    ['/healthz', '/healthz', 'the process answers'],
    ['/readyz', '/readyz', 'PostgreSQL answers (reads are served); accepts_runs: Temporal too (runs are)'],
    ['/metrics', '/metrics', 'Prometheus metrics'],
  ];
  const html = page(
    'Agent runs service',
    `<h1>Agent runs service</h1>
<p>Creates, follows, steers and cancels cloud coding agent runs. The API lives under
<code>/api/v1</code> and takes an API key as <code>Authorization: Bearer …</code>
(<code>npm run keys -- create</code> makes one).</p>
<ul>${links
      .map(
        ([href, name, what]) => `<li><a href="${escapeHtml(href)}">${escapeHtml(name)}</a>: ${escapeHtml(what)}</li>`,
      )
      .join('')}</ul>`,
  );
  const router = new Router();
  router.get('/', (ctx) => {
    if (ctx.accepts('html', 'json') === 'json') {
      ctx.body = { service: 'agent-runs', links: Object.fromEntries(links.map(([href, name]) => [name, href])) };
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    ctx.body = html;
  });
  return router;
}
