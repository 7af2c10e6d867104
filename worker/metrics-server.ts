import http, { type Server } from 'node:http';
import { assertMetricsGuarded, bearerTokenMatches, renderMetrics } from '../core/metrics';

export interface WorkerMetricsServerOptions {
  host: string;
  /** 0 picks a free port (tests); WORKER_METRICS_PORT=0 means no server at all (the caller's choice). */
  port: number;
  /** METRICS_BEARER_TOKEN: when set, a scrape must send `Authorization: Bearer <it>`. */
  bearerToken?: string;
  /** More Prometheus text to serve after the registry's: the Temporal SDK exporter's. */
  extraMetrics?: (() => Promise<string>)[];
  /** The worker's state for `/healthz` and `/readyz`: starting (not yet polling), polling, or draining. */
  state?: () => WorkerState;
}

export type WorkerState = 'starting' | 'ok' | 'draining';

const problem = (status: number, title: string, detail: string) =>
  JSON.stringify({ type: 'about:blank', title, status, detail });

/**
 * A worker's `GET /metrics` (Prometheus text): the registry of core/metrics.ts and the Temporal
 * SDK's metrics, so an operator scrapes one target per worker. Nothing else is served. Without a
 * token it starts on a loopback `host` only (assertMetricsGuarded).
 */
export async function startWorkerMetricsServer(options: WorkerMetricsServerOptions): Promise<Server> {
  assertMetricsGuarded("the worker's metrics server", options.host, options.bearerToken);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'Content-Type': type, ...headers }).end(body);
    if (path === '/healthz' || path === '/readyz') {
      // Alive while it drains (not to be killed early); ready only while it takes new work.
      const state = options.state?.() ?? 'ok';
      const ready = path === '/healthz' || state === 'ok';
      return send(ready ? 200 : 503, 'application/json', JSON.stringify({ status: state }));
    }
    if (path !== '/metrics') {
      return send(
        404,
        'application/problem+json',
        problem(404, 'Not Found', 'This server serves GET /metrics, /healthz and /readyz only.'),
      );
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(405, 'application/problem+json', problem(405, 'Method Not Allowed', 'Use GET.'), {
        Allow: 'GET, HEAD',
      });
    }
    if (options.bearerToken !== undefined && !bearerTokenMatches(req.headers.authorization, options.bearerToken)) {
      return send(
        401,
        'application/problem+json',
        problem(
          401,
          'Unauthorized',
          'This worker requires a token to scrape metrics: send `Authorization: Bearer <METRICS_BEARER_TOKEN>`.',
        ),
        { 'WWW-Authenticate': 'Bearer' },
      );
    }
    renderMetrics(options.extraMetrics).then(
      ({ contentType, body }) => send(200, contentType, req.method === 'HEAD' ? '' : body),
      () => send(500, 'application/problem+json', problem(500, 'Internal Server Error', 'Could not collect metrics.')),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `WORKER_METRICS_PORT: port ${options.port} on ${options.host} is taken; set WORKER_METRICS_PORT to a free port (0: no metrics server).`,
            )
          : err,
      ),
    );
    server.listen(options.port, options.host, () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
  return server;
}
