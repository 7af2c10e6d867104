import Router from '@koa/router';
import { assertMetricsGuarded, bearerTokenMatches, renderMetrics } from '../../core/metrics';
import { ApiError } from '../../core/api-error';

export interface MetricsRouteDeps {
  /** HOST the API binds to: without a token, only loopback may serve the metrics. */
  host: string;
  /** METRICS_BEARER_TOKEN: when set, a scrape must send `Authorization: Bearer <it>`. */
  bearerToken?: string;
  /** More Prometheus text to serve (the Temporal SDK's metrics where this process runs a worker). */
  extraMetrics?: (() => Promise<string>)[];
}

/**
 * `GET /metrics`: Prometheus text format, outside the API keys' authentication: with the
 * operator's token, or open on a loopback-only API (else this throws: the API does not start).
 */
export function createMetricsRouter(deps: MetricsRouteDeps): Router {
  assertMetricsGuarded('the API', deps.host, deps.bearerToken);
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    if (
      deps.bearerToken !== undefined &&
      !bearerTokenMatches(ctx.get('authorization') || undefined, deps.bearerToken)
    ) {
      throw new ApiError(
        'authentication_required',
        'This service requires a token to scrape metrics: send `Authorization: Bearer <METRICS_BEARER_TOKEN>`.',
        { headers: { 'WWW-Authenticate': 'Bearer' } },
      );
    }
    const { contentType, body } = await renderMetrics(deps.extraMetrics);
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
