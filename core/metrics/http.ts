import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry, SHORT_BUCKETS } from './registry';

/** HTTP: the API's requests and its event streams (SSE). */

export const httpRequestDuration = new Histogram({
  name: 'agent_runs_http_request_duration_seconds',
  help: 'HTTP requests of the API by method, route template (`unmatched` when no route matched) and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: SHORT_BUCKETS,
  registers: [metricsRegistry],
});

export const eventStreamsOpen = new Gauge({
  name: 'agent_runs_event_streams_open',
  help: 'Event streams (SSE) this API process is serving now.',
  registers: [metricsRegistry],
});

export const eventStreamsRefused = new Counter({
  name: 'agent_runs_event_streams_refused_total',
  help: 'Event streams refused with 429 at a cap: client (SSE_MAX_STREAMS_PER_CLIENT), run (SSE_MAX_STREAMS_PER_RUN), total (SSE_MAX_STREAMS).',
  labelNames: ['cap'] as const,
  registers: [metricsRegistry],
});

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function observeHttpRequest(method: string, route: string | undefined, status: number, seconds: number): void {
  httpRequestDuration.observe(
    { method: HTTP_METHODS.has(method) ? method : 'OTHER', route: route ?? 'unmatched', status: String(status) },
    seconds,
  );
}
