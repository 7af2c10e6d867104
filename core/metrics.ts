/**
 * Every metric of the service, on one prom-client registry that the API (`GET /metrics`), the
 * worker (`WORKER_METRICS_PORT`) and `npm start` serve. Names start with `agent_runs_`; labels
 * take only values from short fixed sets (route templates, states, error codes, tool names,
 * configured models): never a team, a run id or anything else a caller can multiply.
 * Never imported by workflow code.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunState } from './run-state';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** Seconds, from a few milliseconds (a request) to an hour (a queued run, a long step). */
const SHORT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LONG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export const httpRequestDuration = new Histogram({
  name: 'agent_runs_http_request_duration_seconds',
  help: 'HTTP requests of the API by method, route template (`unmatched` when no route matched) and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: SHORT_BUCKETS,
  registers: [metricsRegistry],
});

export const runsCreated = new Counter({
  name: 'agent_runs_runs_created_total',
  help: 'Runs created, by origin: api, factory (a factory agent, through the API), schedule, orchestration (dispatched by a run).',
  labelNames: ['origin'] as const,
  registers: [metricsRegistry],
});

export const runsEnded = new Counter({
  name: 'agent_runs_runs_ended_total',
  help: 'Turns of runs that reached a terminal state, by state and error code (`none` without one).',
  labelNames: ['state', 'error_code'] as const,
  registers: [metricsRegistry],
});

export const runQueueDuration = new Histogram({
  name: 'agent_runs_run_queue_duration_seconds',
  help: 'Time from QUEUED to INPROGRESS of each turn of a run.',
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const stepDuration = new Histogram({
  name: 'agent_runs_step_duration_seconds',
  help: 'Agent steps (a model call and the tool calls it asked for), by outcome: ok or error (retried by Temporal or failing the run).',
  labelNames: ['outcome'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const modelCallDuration = new Histogram({
  name: 'agent_runs_model_call_duration_seconds',
  help: 'Model provider calls by model and outcome (ok, error).',
  labelNames: ['model', 'outcome'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

export const modelTokens = new Counter({
  name: 'agent_runs_model_tokens_total',
  help: 'Tokens of model calls by model and kind (input, output).',
  labelNames: ['model', 'kind'] as const,
  registers: [metricsRegistry],
});

export const modelCost = new Counter({
  name: 'agent_runs_model_cost_usd_total',
  help: 'What model calls cost in USD, by model (models with a price only: MODEL_PRICES).',
  labelNames: ['model'] as const,
  registers: [metricsRegistry],
});

export const toolCalls = new Counter({
  name: 'agent_runs_tool_calls_total',
  help: 'Tool calls by tool (built-in name, `mcp` for MCP server tools, `unknown`) and outcome (ok, error, interrupted).',
  labelNames: ['tool', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const toolCallDuration = new Histogram({
  name: 'agent_runs_tool_call_duration_seconds',
  help: 'Tool calls by tool.',
  labelNames: ['tool'] as const,
  buckets: LONG_BUCKETS,
  registers: [metricsRegistry],
});

/** Why a connection was refused: the run's network policy, or the platform's address rules. */
export type RefusalKind =
  | 'network_policy'
  | 'private_address'
  | 'platform_endpoint'
  | 'unresolvable'
  | 'bad_port'
  | 'too_many_connections'
  | 'other';

export const sandboxRefusals = new Counter({
  name: 'agent_runs_sandbox_refusals_total',
  help: 'Connections refused, by kind and by who asked: sandbox (a command or stdio MCP server, through the egress proxy) or worker (its own connections to MCP servers and webhooks).',
  labelNames: ['kind', 'source'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveryAttempts = new Counter({
  name: 'agent_runs_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by outcome: delivered (2xx), http_error, redirect, timeout, refused (address rules), network_error, unsendable.',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveriesGivenUp = new Counter({
  name: 'agent_runs_webhook_deliveries_given_up_total',
  help: 'Webhook deliveries whose retry window ran out without a 2xx.',
  registers: [metricsRegistry],
});

export const rateLimitRejections = new Counter({
  name: 'agent_runs_rate_limit_rejections_total',
  help: 'Requests and runs refused by a limit: request_rate (RATE_LIMIT_REQUESTS_PER_MINUTE), runs_per_hour (TEAM_MAX_RUNS_PER_HOUR), client_address (RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE).',
  labelNames: ['limit'] as const,
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

export const workspacesOnDisk = new Gauge({
  name: 'agent_runs_worker_workspaces',
  help: "Runs' workspaces on this worker's disk that are still wanted, after its latest sweep.",
  labelNames: ['worker_id'] as const,
  registers: [metricsRegistry],
});

export const workspacesRemoved = new Counter({
  name: 'agent_runs_worker_workspaces_removed_total',
  help: 'Workspaces the sweep removed: run_gone, held_elsewhere (another worker or a newer provisioning), settled (ended past its idle window).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const workspaceBytesReclaimed = new Counter({
  name: 'agent_runs_worker_workspace_bytes_reclaimed_total',
  help: 'Bytes of disk the workspace sweep gave back.',
  registers: [metricsRegistry],
});

export const runLimitsEnforced = new Gauge({
  name: 'agent_runs_worker_run_limits_enforced',
  help: "Whether this worker limits each run's processes together in a cgroup (1), or only one by one (0, AGENT_RUN_LIMITS=off).",
  registers: [metricsRegistry],
});

export const databaseReachable = new Gauge({
  name: 'agent_runs_database_reachable',
  help: 'Whether PostgreSQL answers this process (1) or failed a probe after a query or connection failed (0): new database work is then refused at once.',
  registers: [metricsRegistry],
});
databaseReachable.set(1);

export const databaseRefusals = new Counter({
  name: 'agent_runs_database_refusals_total',
  help: 'Database work (a connection from the pool) refused at once, or let go while waiting, because PostgreSQL was unreachable.',
  registers: [metricsRegistry],
});

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Where the run came from, as `runsCreated` counts it. */
export type RunCreatedOrigin = 'api' | 'factory' | 'schedule' | 'orchestration';

export function observeRunCreated(origin: RunCreatedOrigin): void {
  runsCreated.inc({ origin });
}

/** A turn that reached a terminal state (counted once: only by the write that applied it). */
export function observeRunEnded(state: RunState, errorCode: string | undefined): void {
  runsEnded.inc({ state, error_code: errorCode ?? 'none' });
}

export function observeRunQueued(seconds: number): void {
  runQueueDuration.observe(seconds);
}

export function observeHttpRequest(method: string, route: string | undefined, status: number, seconds: number): void {
  httpRequestDuration.observe(
    { method: HTTP_METHODS.has(method) ? method : 'OTHER', route: route ?? 'unmatched', status: String(status) },
    seconds,
  );
}

/** Times `fn` into `histogram` with `outcome` ok or error, and returns or throws what it did. */
async function timed<T, L extends string>(
  histogram: Histogram<L>,
  labels: Partial<Record<L, string>>,
  fn: () => Promise<T>,
): Promise<T> {
  const end = histogram.startTimer(labels);
  try {
    const result = await fn();
    end({ outcome: 'ok' } as Partial<Record<L, string>>);
    return result;
  } catch (err) {
    end({ outcome: 'error' } as Partial<Record<L, string>>);
    throw err;
  }
}

export function observeStep<T>(fn: () => Promise<T>): Promise<T> {
  return timed(stepDuration, {}, fn);
}

/**
 * One model call: its duration, and on success its tokens and cost (null: the model has no
 * price). `configured`: the operator named the model (a price, a context window, the default).
 */
export async function observeModelCall<T extends { inputTokens: number; outputTokens: number }>(
  modelId: string,
  options: { configured: boolean; costUsd: (reply: T) => number | null },
  call: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  let reply: T;
  try {
    reply = await call();
  } catch (err) {
    const model = modelLabel(modelId, options.configured);
    modelCallDuration.observe({ model, outcome: 'error' }, (performance.now() - started) / 1000);
    throw err;
  }
  // A provider answered for it: a real model, fit to be a label.
  const model = modelLabel(modelId, true);
  modelCallDuration.observe({ model, outcome: 'ok' }, (performance.now() - started) / 1000);
  modelTokens.inc({ model, kind: 'input' }, reply.inputTokens);
  modelTokens.inc({ model, kind: 'output' }, reply.outputTokens);
  const cost = options.costUsd(reply);
  if (cost !== null) modelCost.inc({ model }, cost);
  return reply;
}

/** One tool call; its result says whether it failed. */
export async function observeToolCall<T extends { isError: boolean }>(
  tool: string,
  call: () => Promise<T>,
): Promise<T> {
  const end = toolCallDuration.startTimer({ tool });
  try {
    const result = await call();
    toolCalls.inc({ tool, outcome: result.isError ? 'error' : 'ok' });
    return result;
  } catch (err) {
    toolCalls.inc({ tool, outcome: 'error' });
    throw err;
  } finally {
    end();
  }
}

/** A tool call that did not run: interrupted by a worker's death, or an unknown tool (error). */
export function observeToolCallNotRun(tool: string, outcome: 'interrupted' | 'error'): void {
  toolCalls.inc({ tool, outcome });
}

export function observeRefusal(kind: RefusalKind, source: 'sandbox' | 'worker'): void {
  sandboxRefusals.inc({ kind, source });
}

export type WebhookAttemptOutcome =
  'delivered' | 'http_error' | 'redirect' | 'timeout' | 'refused' | 'network_error' | 'unsendable';

export function observeWebhookAttempt(outcome: WebhookAttemptOutcome): void {
  webhookDeliveryAttempts.inc({ outcome });
}

export function observeWebhookGivenUp(): void {
  webhookDeliveriesGivenUp.inc();
}

/** Most distinct model labels a process gives out; further models count as `<provider>/other`. */
const MAX_MODEL_LABELS = 100;
const modelLabels = new Set<string>();

/**
 * The label of a model id: as is once it is known (configured by the operator, or a provider
 * answered for it), up to MAX_MODEL_LABELS; otherwise `<provider>/other`, since callers choose
 * model ids freely.
 */
function modelLabel(modelId: string, known: boolean): string {
  if (modelLabels.has(modelId)) return modelId;
  if (known && modelLabels.size < MAX_MODEL_LABELS) {
    modelLabels.add(modelId);
    return modelId;
  }
  return `${modelId.slice(0, Math.max(0, modelId.indexOf('/')))}/other`;
}

/** The Prometheus text of the registry, followed by other sources' (the Temporal SDK's exporter). */
export async function renderMetrics(
  sources: (() => Promise<string>)[] = [],
): Promise<{ contentType: string; body: string }> {
  const parts = await Promise.all([metricsRegistry.metrics(), ...sources.map((source) => source())]);
  return {
    contentType: metricsRegistry.contentType,
    body: parts.map((p) => (p.endsWith('\n') || p === '' ? p : `${p}\n`)).join(''),
  };
}

/** Whether an `Authorization` header carries `Bearer <token>` (compared in constant time). */
export function bearerTokenMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(match[1]!), digest(token));
}
