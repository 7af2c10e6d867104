import type { Context, Middleware } from 'koa';
import type { Logger } from '../../core/logger';

/** Probes a load balancer sends every few seconds: logged at debug when they succeed. */
const PROBE_ROUTES = new Set(['/healthz', '/readyz']);

interface MatchedLayer {
  path: string | RegExp;
  methods: string[];
  paramNames: unknown[];
}

/**
 * The route template of the request (`/api/v1/agent/runs/:runId`), also when a middleware
 * refused it before the route ran (a missing key): the route that ran, else the most specific
 * route for the path and method, else for the path; null when no route has the path.
 */
export function routeTemplate(ctx: Context): string | null {
  const state = ctx as { matched?: MatchedLayer[]; _matchedRoute?: string | RegExp };
  const routes = (state.matched ?? []).filter((layer) => layer.methods.length > 0);
  if (routes.some((layer) => layer.path === state._matchedRoute)) return String(state._matchedRoute);
  const forMethod = routes.filter((layer) => layer.methods.includes(ctx.method));
  const candidates = forMethod.length ? forMethod : routes;
  if (candidates.length === 0) return null;
  return String(candidates.reduce((a, b) => (b.paramNames.length < a.paramNames.length ? b : a)).path);
}

/**
 * One line per request once its response is over (an event stream's when it closes): request
 * id, method, route template (never the path, whose ids can be capabilities, nor the query),
 * status and duration. 5xx at error (the service failed); the rest, a client's mistakes too, at
 * info, health probes at debug.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.res.once('close', () => {
      const status = ctx.res.statusCode;
      const route = routeTemplate(ctx);
      const fields = {
        request_id: ctx.state.requestId as string | undefined,
        method: ctx.method,
        route,
        status,
        duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        ...(ctx.res.writableFinished ? {} : { aborted: true }),
      };
      if (status >= 500) logger.error('request', fields);
      else if (status < 400 && route !== null && PROBE_ROUTES.has(route)) logger.debug('request', fields);
      else logger.info('request', fields);
    });
    await next();
  };
}
