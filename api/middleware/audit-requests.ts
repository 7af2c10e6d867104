import type { Context, Middleware } from 'koa';
import type { AuditDetailValue, AuditOutcome } from '../../core/audit/audit-event';
import { ApiError } from '../../core/api-error';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import type { AuditLog } from '../../services/audit/audit-log';
import { auditedResourceId, ROUTE_AUDITS } from '../audit-actions';

interface RouteLayer {
  path: string;
  methods: string[];
  paramNames: unknown[];
  captures(path: string): string[];
  params(path: string, captures: string[], existing?: Record<string, string>): Record<string, string>;
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Records every request that changes something (ROUTE_AUDITS) in the audit log once it is
 * answered, refused ones too, before the answer leaves: who (the key's holder; an expired key's
 * too), what, which, from where, and how it went. Placed before authentication so that a refused
 * key is recorded; a request without a known key has no team to record it in (the request log has
 * it), and one refused by a rate limit is not recorded (a flood must not write a row a request).
 */
export function auditRequests(audit: AuditLog): Middleware {
  return async (ctx, next) => {
    if (READS.has(ctx.method)) return next();
    let failure: unknown;
    try {
      await next();
    } catch (err) {
      failure = err;
    }
    await recordRequest(ctx, audit, failure);
    if (failure !== undefined) throw failure;
  };
}

async function recordRequest(ctx: Context, audit: AuditLog, failure: unknown): Promise<void> {
  const route = routeOf(ctx);
  const routeAudit = route ? ROUTE_AUDITS[`${ctx.method} ${route.path}`] : undefined;
  const principal = (ctx.state.principal ?? ctx.state.refusedPrincipal) as AuthenticatedPrincipal | undefined;
  if (!route || !routeAudit || !principal) return;
  const status = failure === undefined ? ctx.status : statusOf(failure);
  if (status === 429) return;
  const params = route.params(ctx.path, route.captures(ctx.path), {});
  await audit.record({
    teamId: principal.teamId,
    action: routeAudit.action,
    outcome: outcomeOf(status),
    actor: {
      type: principal.type === 'user' ? 'user' : 'service_account',
      uid: principal.uid,
      keyPrefix: principal.keyPrefix,
    },
    resource: {
      type: routeAudit.resource,
      id: auditedResourceId(routeAudit, { params, body: ctx.state.body, answer: ctx.body }),
    },
    requestId: ctx.state.requestId as string | undefined,
    clientAddress: ctx.ip,
    details:
      failure === undefined
        ? (ctx.state.auditDetails as Record<string, AuditDetailValue>)
        : failureDetails(failure, status),
  });
}

/** The route that answered: of the routes the path matched for this method, the most specific (as the router picks). */
function routeOf(ctx: Context): RouteLayer | undefined {
  const matched = ((ctx as unknown as { matched?: RouteLayer[] }).matched ?? []).filter((layer) =>
    layer.methods.includes(ctx.method),
  );
  if (matched.length === 0) return undefined;
  const fewest = Math.min(...matched.map((layer) => layer.paramNames.length));
  return matched.find((layer) => layer.paramNames.length === fewest);
}

function statusOf(err: unknown): number {
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

function outcomeOf(status: number): AuditOutcome {
  if (status === 401 || status === 403) return 'denied';
  return status < 400 ? 'success' : 'failed';
}

/**
 * The status and error code of a refusal; the reason too for a denial only (its text is the
 * service's own: which role or key was missing), never a validation's, which may quote the request.
 */
function failureDetails(err: unknown, status: number): Record<string, AuditDetailValue> {
  if (!(err instanceof ApiError)) return { status };
  return { status, error: err.code, ...(outcomeOf(status) === 'denied' ? { reason: err.detail.slice(0, 300) } : {}) };
}
