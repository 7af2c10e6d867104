import type { Context, Middleware } from 'koa';
import { observeHttpRequest } from '../../core/metrics';

interface MatchedLayer {
  path: string | RegExp;
  methods: string[];
  paramNames: unknown[];
}

/**
 * The template of the route that took the request (`/api/v1/agent/runs/:runId`), or undefined
 * when none matched. @koa/router leaves `_matchedRoute` at the last layer that ran, which is a
 * middleware's (authentication's) when it refused the request: then the most specific route
 * the path and method matched.
 */
export function routeTemplate(ctx: Context): string | undefined {
  const state = ctx as Context & { _matchedRoute?: string | RegExp; matched?: MatchedLayer[] };
  const routes = (state.matched ?? []).filter((l) => l.methods.includes(ctx.method));
  const last = state._matchedRoute;
  if (last !== undefined && routes.some((l) => l.path === last)) return String(last);
  if (routes.length === 0) return undefined;
  const fewest = Math.min(...routes.map((l) => l.paramNames.length));
  return String(routes.find((l) => l.paramNames.length === fewest)!.path);
}

/**
 * Times every request into `agent_runs_http_request_duration_seconds`, labelled with its route
 * template, never the raw path. Outermost, so the status is the one sent, problem documents
 * included. An event stream counts until its headers are sent.
 */
export function httpMetrics(): Middleware {
  return async function httpMetricsMiddleware(ctx, next) {
    const started = performance.now();
    try {
      await next();
    } finally {
      observeHttpRequest(ctx.method, routeTemplate(ctx), ctx.status, (performance.now() - started) / 1000);
    }
  };
}
