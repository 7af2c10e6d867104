import type { Context, Middleware } from 'koa';
import type { Logger } from '../../core/logger';

/** Probes a load balancer sends every few seconds: logged at debug when they succeed. */
const PROBE_ROUTES = new Set(['/healthz', '/readyz']);

/** The route template the request matched (`/api/v1/agent/runs/:runId`), null when none did. */
export function routeTemplate(ctx: Context): string | null {
  const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
  return route === undefined ? null : String(route);
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
