import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { Middleware } from 'koa';

/** The route template @koa/router leaves on the context, e.g. `/api/v1/agent/runs/:runId`. */
const routeOf = (ctx: object): string | undefined =>
  (ctx as { _matchedRoute?: string | RegExp })._matchedRoute?.toString();

/**
 * Outermost middleware when tracing is on: one server span per request, named
 * `METHOD /route/template`, continuing the caller's W3C `traceparent`. Everything the request
 * does (Temporal starts and signals included) is a child of it. The query string is left out:
 * download links carry their signature in it.
 */
export function traceRequests(): Middleware {
  return async (ctx, next) => {
    const parent = propagation.extract(context.active(), ctx.headers);
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: ctx.method,
      [ATTR_URL_PATH]: ctx.path,
      [ATTR_URL_SCHEME]: ctx.protocol,
      [ATTR_SERVER_ADDRESS]: ctx.hostname,
      [ATTR_NETWORK_PROTOCOL_VERSION]: ctx.req.httpVersion,
      [ATTR_CLIENT_ADDRESS]: ctx.ip,
      ...(ctx.get('user-agent') ? { [ATTR_USER_AGENT_ORIGINAL]: ctx.get('user-agent') } : {}),
    };
    if (ctx.req.socket.localPort) attributes[ATTR_SERVER_PORT] = ctx.req.socket.localPort;
    const span = trace.getTracer('agent-runs-api').startSpan(ctx.method, { kind: SpanKind.SERVER, attributes }, parent);
    let failed = false;
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (err) {
      // The error handler answers every error; this is the rare one it let through.
      failed = true;
      throw err;
    } finally {
      const route = routeOf(ctx);
      if (route) {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute(ATTR_HTTP_ROUTE, route);
      }
      const status = failed ? 500 : ctx.status;
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      if (typeof ctx.state.requestId === 'string') span.setAttribute('agent_runs.request_id', ctx.state.requestId);
      if (status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, String(status));
      }
      span.end();
    }
  };
}
