import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { parseNetworkPolicyText, type NetworkPolicy } from './network-policy';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const intFrom = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

const envSchema = z.object({
  PORT: intFrom(8080, 0, 65535),
  HOST: z.string().default('127.0.0.1'),
  PUBLIC_URL: optionalString.pipe(z.url().optional()),
  AGENT_RUNS_DATA_DIR: z.string().default('./.data'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),

  DATABASE_URL: optionalString,
  EMBEDDED_POSTGRES_PORT: intFrom(54329, 1, 65535),

  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('agent-runs'),
  TEMPORAL_CLI_PATH: optionalString,
  TEMPORAL_DEV_PORT: intFrom(7233, 1, 65535),
  TEMPORAL_UI_PORT: intFrom(8233, 1, 65535),
  TEMPORAL_UI_URL: optionalString.pipe(z.url().optional()),
  TEMPORAL_RPC_TIMEOUT_SECONDS: intFrom(5, 1, 300),
  DATABASE_QUERY_TIMEOUT_SECONDS: intFrom(10, 1, 3600),

  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: z.url().default('https://api.openai.com/v1'),
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: z.url().default('https://api.anthropic.com'),
  MODEL_PRICES: optionalString,
  MODEL_CONTEXT_TOKENS: optionalString,
  AGENT_DEFAULT_CONTEXT_TOKENS: intFrom(128_000, 1000, 10_000_000),
  AGENT_MAX_STEPS: intFrom(50, 1, 10_000),
  AGENT_MAX_TOKENS: intFrom(2_000_000, 1, 1_000_000_000),
  AGENT_COMMAND_TIMEOUT_SECONDS: intFrom(600, 1, 86_400),
  AGENT_TOOL_OUTPUT_LIMIT_BYTES: intFrom(30_000, 1_000, 10_000_000),
  ORCHESTRATION_MAX_DEPTH: intFrom(3, 1, 20),
  ORCHESTRATION_MAX_CHILDREN_PER_RUN: intFrom(10, 1, 1000),
  AGENT_RUNS_WORKSPACE_DIR: optionalString,
  GIT_BASE_URL: z.string().default('https://github.com'),
  GIT_TOKEN: optionalString,
  SETUP_COMMAND_TIMEOUT_SECONDS: intFrom(900, 1, 86_400),
  WORKSPACE_SCHEDULE_TO_START_SECONDS: intFrom(60, 1, 3600),
  AGENT_DEFAULT_MODEL: z.string().default('openai/gpt-4o-mini'),
  AGENT_IDLE_TIMEOUT_MINUTES: intFrom(10, 0, 1440),
  AGENT_MAX_IDLE_TIMEOUT_MINUTES: intFrom(1440, 0, 1440),
  MODEL_REQUEST_TIMEOUT_SECONDS: intFrom(600, 1, 3600),
  MODEL_RETRY_MAX_ATTEMPTS: intFrom(6, 1, 100),
  MODEL_RETRY_INITIAL_INTERVAL_MS: intFrom(1000, 1, 3_600_000),
  MODEL_RETRY_MAX_INTERVAL_MS: intFrom(60_000, 1, 3_600_000),
  ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: intFrom(10, 1, 600),

  ERROR_REFERENCE_BASE_URL: optionalString.pipe(z.url().optional()),

  AGENT_SANDBOX: z.enum(['bwrap', 'none']).default('bwrap'),
  AGENT_SANDBOX_BWRAP_PATH: optionalString,
  AGENT_SANDBOX_UID: intFrom(200_000, 1000, 4_000_000_000),
  AGENT_SANDBOX_READONLY_PATHS: optionalString,
  AGENT_SANDBOX_MEMORY_MB: intFrom(4096, 64, 1_048_576),
  AGENT_SANDBOX_MAX_PROCESSES: intFrom(512, 8, 1_000_000),
  AGENT_SANDBOX_MAX_FILE_SIZE_MB: intFrom(2048, 1, 1_048_576),
  AGENT_SANDBOX_CPU_SECONDS: intFrom(3600, 1, 1_000_000),
  AGENT_SANDBOX_MAX_OPEN_FILES: intFrom(4096, 64, 1_048_576),
  AGENT_SANDBOX_CPUS: z.coerce.number().min(0).max(1024).default(0),
  AGENT_RUN_LIMITS: z.enum(['enforce', 'off']).default('enforce'),
  AGENT_WORKSPACE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .default(10 * 1024 ** 3),
  AGENT_NETWORK_DEFAULT: z.string().default('open'),
  AGENT_NETWORK_ALLOWED_PRIVATE_HOSTS: optionalString,
  OUTBOUND_ALLOWED_PRIVATE_HOSTS: optionalString,
  SECRETS_ENCRYPTION_KEY: optionalString,
  GIT_ALLOWED_OWNERS: optionalString,

  WORKER_ID: optionalString.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9._@-]{1,100}$/, 'must be 1-100 of [A-Za-z0-9._@-]')
      .optional(),
  ),
  WORKER_MAX_CONCURRENT_RUNS: intFrom(50, 1, 10_000),
  WORKER_LEASE_SECONDS: intFrom(60, 5, 3600),
  WORKSPACE_SWEEP_INTERVAL_SECONDS: intFrom(300, 1, 86_400),
  RECONCILE_INTERVAL_SECONDS: intFrom(20, 1, 3600),
  DOWNLOAD_URL_TTL_SECONDS: intFrom(3600, 1, 7 * 24 * 3600),
  SSE_HEARTBEAT_SECONDS: intFrom(15, 1, 3600),
  SSE_MAX_STREAMS: intFrom(1000, 1, 1_000_000),
  SSE_MAX_STREAMS_PER_CLIENT: intFrom(20, 1, 1_000_000),
  SSE_MAX_STREAMS_PER_RUN: intFrom(100, 1, 1_000_000),
  WEBHOOK_TIMEOUT_SECONDS: intFrom(10, 1, 300),
  WEBHOOK_RETRY_INITIAL_INTERVAL_MS: intFrom(1000, 1, 3_600_000),
  WEBHOOK_RETRY_MAX_INTERVAL_MS: intFrom(3_600_000, 1, 86_400_000),
  WEBHOOK_RETRY_WINDOW_SECONDS: intFrom(86_400, 1, 30 * 86_400),
  WEBHOOK_LOG_RETENTION_DAYS: intFrom(30, 1, 3650),
  RATE_LIMIT_REQUESTS_PER_MINUTE: intFrom(600, 0, 1_000_000),
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: intFrom(300, 0, 1_000_000),
  TRUST_PROXY_HOPS: intFrom(0, 0, 10),
  TEAM_MAX_RUNS_PER_HOUR: intFrom(1000, 0, 10_000_000),
  TEAM_MAX_CONCURRENT_RUNS: intFrom(100, 0, 1_000_000),
  TEAM_MAX_SCHEDULES: intFrom(100, 0, 1_000_000),
  TEAM_MAX_WEBHOOKS: intFrom(20, 0, 1_000_000),
  TEAM_MAX_AGENTS: intFrom(500, 0, 1_000_000),
  TEAM_MAX_ENVIRONMENTS: intFrom(200, 0, 1_000_000),
  METRICS_BEARER_TOKEN: optionalString,
  WORKER_METRICS_PORT: intFrom(9464, 0, 65535),
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).default('false'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(z.url().optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(z.url().optional()),
  OTEL_EXPORTER_OTLP_HEADERS: optionalString,
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: optionalString,
  OTEL_SERVICE_NAME: optionalString,
});

export interface Config {
  port: number;
  host: string;
  /** Reverse proxies in front of the API whose X-Forwarded-For is trusted for the client's address (0: none). */
  trustProxyHops: number;
  publicUrl: string;
  dataDir: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Unset: each entry point's default (`npm start`: pretty on a terminal; otherwise JSON lines). */
  logFormat?: 'json' | 'pretty';
  database: { url?: string; embeddedPort: number; queryTimeoutMs: number };
  temporal: {
    address?: string;
    namespace: string;
    taskQueue: string;
    cliPath?: string;
    devPort: number;
    uiPort: number;
    /** Where operators open the Temporal UI: TEMPORAL_UI_URL, else the embedded server's. */
    uiUrl?: string;
    /** Deadline of each call the API makes to Temporal; past it the request answers 503. */
    rpcTimeoutMs: number;
  };
  models: {
    openai: { apiKey?: string; baseUrl: string };
    anthropic: { apiKey?: string; baseUrl: string };
    /** USD per million input and output tokens, by model id. */
    prices: Record<string, { input: number; output: number }>;
    /** Context windows in tokens, by model id; `defaultContextTokens` for the others. */
    contextTokens: Record<string, number>;
    defaultContextTokens: number;
    defaultModel: string;
    requestTimeoutSeconds: number;
    retry: { maxAttempts: number; initialIntervalMs: number; maxIntervalMs: number };
  };
  idleTimeoutMinutes: number;
  /** The longest idle window a run may ask for. */
  maxIdleTimeoutMinutes: number;
  heartbeatTimeoutSeconds: number;
  errorReferenceBaseUrl: string;
  agent: { maxSteps: number; maxTokens: number; commandTimeoutSeconds: number; toolOutputLimitBytes: number };
  /** Bounds of a factory's run tree: levels below a root run, and runs one run may dispatch. */
  orchestration: { maxDepth: number; maxChildrenPerRun: number };
  workspace: {
    dir: string;
    gitBaseUrl: string;
    gitToken?: string;
    /** Lower-cased owners a run's repositories may belong to; undefined allows every owner. */
    gitAllowedOwners?: string[];
    setupCommandTimeoutSeconds: number;
    scheduleToStartSeconds: number;
  };
  sandbox: SandboxConfig;
  worker: {
    /** Names the worker's workspace queue; stable across restarts on the same volume. */
    id: string;
    /** Workspaces (runs) one worker holds at once; provisioning waits for a worker with room. */
    maxConcurrentRuns: number;
    /** A worker whose lease is older than this is dead: its runs provision elsewhere. */
    leaseSeconds: number;
    /** How often a worker removes the workspaces on its disk that nothing will use again. */
    sweepIntervalSeconds: number;
  };
  network: {
    /** Policy of environments that set none: `open`, `none`, or allowed domains. */
    defaultPolicy: NetworkPolicy;
    /** Private hosts and CIDRs the sandbox egress proxy may reach (still never the platform's own). */
    sandboxAllowedPrivateHosts: string[];
    /** Private hosts and CIDRs the worker may connect to for MCP servers and webhooks. */
    outboundAllowedPrivateHosts: string[];
  };
  /** How often the API looks for runs whose workflow closed without finishing them. */
  reconcileIntervalSeconds: number;
  /** How long a signed download URL (artifacts, handoff files) works. */
  downloadUrlTtlSeconds: number;
  /** Seconds between the comments an event stream sends to keep proxies from closing it. */
  sseHeartbeatSeconds: number;
  /** Event streams one API process serves at once: in all, to one client address, of one run. */
  sseCaps: StreamCaps;
  /** 32-byte key for request-supplied credentials at rest; `npm start` provides one from the data dir. */
  secretsEncryptionKey?: string;
  /** Delivery of webhooks (workers): each POST's timeout, the retries' backoff and how long they go on. */
  webhooks: {
    timeoutSeconds: number;
    retry: { initialIntervalMs: number; maxIntervalMs: number; windowSeconds: number };
    /** Finished deliveries older than this leave the delivery log. */
    logRetentionDays: number;
  };
  /** Rate limits and quotas (0 = off), kept in PostgreSQL so every API instance and worker shares them. */
  quotas: {
    /** Requests one API key may make per minute. */
    requestsPerMinute: number;
    /** Requests without a valid key one client address may make per minute (per API process). */
    unauthenticatedPerMinute: number;
    /** Runs one team may create per hour (API, factory dispatches, schedule firings). */
    teamMaxRunsPerHour: number;
    /** Runs of one team admitted (QUEUED to INPROGRESS) at once; the others wait QUEUED for a slot. */
    teamMaxConcurrentRuns: number;
    /** How many of each resource one team may have (0: no cap); past it a create is 409. */
    teamMaxSchedules: number;
    teamMaxWebhooks: number;
    teamMaxAgents: number;
    teamMaxEnvironments: number;
  };
  metrics: {
    /** When set, `GET /metrics` (API and workers) requires `Authorization: Bearer <it>`. */
    bearerToken?: string;
    /** Port of a worker's `/metrics` (on HOST); 0: no metrics server and no Temporal SDK exporter. */
    workerPort: number;
  };
  /** OpenTelemetry tracing; undefined (off) unless an OTLP endpoint is set. */
  tracing?: TracingConfig;
}

export interface StreamCaps {
  total: number;
  perClient: number;
  perRun: number;
}

export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON). */
  tracesUrl: string;
  /** Sent with every export (a collector's API key, say). */
  headers: Record<string, string>;
  /** OTEL_SERVICE_NAME; each entry point has its own default. */
  serviceName?: string;
}

export interface SandboxConfig {
  kind: 'bwrap' | 'none';
  bwrapPath?: string;
  /** Host uid given to runs' processes when the worker runs as root. */
  uid: number;
  /** Extra host paths mounted read-only into every sandbox (toolchains outside /usr). */
  readonlyPaths: string[];
  limits: { memoryMb: number; maxProcesses: number; maxFileSizeMb: number; cpuSeconds: number; maxOpenFiles: number };
  /**
   * `enforce`: every run's processes share one cgroup with AGENT_SANDBOX_MEMORY_MB,
   * AGENT_SANDBOX_MAX_PROCESSES and a CPU share; a worker that cannot make one refuses to start.
   * `off`: the per-process limits alone (the operator's explicit choice, logged loudly).
   */
  runLimits: 'enforce' | 'off';
  /** CPUs one run may use at most (0: an equal share with the other runs, no cap). */
  cpus: number;
  /** Bytes a run's files (workspace, home, tmp) may take on disk; 0: no limit. */
  workspaceMaxBytes: number;
}

/** Prices of well-known models (USD per million tokens); MODEL_PRICES adds to or overrides them. */
const DEFAULT_PRICES: Record<string, { input: number; output: number }> = {
  'openai/gpt-4o': { input: 2.5, output: 10 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
  'openai/gpt-4.1': { input: 2, output: 8 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5 },
};

/** Context windows of well-known models, in tokens; MODEL_CONTEXT_TOKENS adds to or overrides them. */
const DEFAULT_CONTEXT_TOKENS: Record<string, number> = {
  'openai/gpt-4o': 128_000,
  'openai/gpt-4o-mini': 128_000,
  'openai/gpt-4.1': 1_000_000,
  'openai/gpt-4.1-mini': 1_000_000,
  'anthropic/claude-sonnet-4-5': 200_000,
  'anthropic/claude-haiku-4-5': 200_000,
};

/** A JSON object keyed by model id from a variable, merged over built-in values. */
function parseModelMap<T>(
  name: string,
  raw: string | undefined,
  value: z.ZodType<T>,
  defaults: Record<string, T>,
  example: string,
): Record<string, T> {
  if (raw === undefined) return defaults;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError(`Invalid configuration:\n  ${name}: must be JSON like ${example}`);
  }
  const parsed = z.record(z.string(), value).safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      `Invalid configuration:\n  ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return { ...defaults, ...parsed.data };
}

export class ConfigError extends Error {}

const commaList = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** `key=value,key2=value2` as OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS spells it (values URL-encoded). */
function parseOtlpHeaders(name: string, raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of commaList(raw)) {
    const eq = pair.indexOf('=');
    const key = pair.slice(0, eq).trim();
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      value = '';
    }
    if (eq <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key) || value === '' || /[\r\n]/.test(value)) {
      throw new ConfigError(
        `Invalid configuration:\n  ${name}: must be comma-separated key=value pairs, like api-key=abc123,tenant=ops`,
      );
    }
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

/** Traces go out when an OTLP endpoint is set (per the OpenTelemetry conventions: `/v1/traces` is appended to the generic one). */
function tracingConfig(e: z.infer<typeof envSchema>): TracingConfig | undefined {
  if (e.OTEL_SDK_DISABLED === 'true') return undefined;
  const tracesUrl =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!tracesUrl) return undefined;
  return {
    tracesUrl,
    headers: {
      ...parseOtlpHeaders('OTEL_EXPORTER_OTLP_HEADERS', e.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseOtlpHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS', e.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    serviceName: e.OTEL_SERVICE_NAME,
  };
}

function parseNetworkPolicy(raw: string): NetworkPolicy {
  const parsed = parseNetworkPolicyText(raw);
  if (typeof parsed === 'string' && parsed.startsWith('!')) {
    throw new ConfigError(`Invalid configuration:\n  AGENT_NETWORK_DEFAULT: ${parsed.slice(1)}`);
  }
  return parsed as NetworkPolicy;
}

/** Reads and validates configuration; the only place that looks at environment variables. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as in most shells' and compose files' conventions.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  const workspaceDir = path.resolve(e.AGENT_RUNS_WORKSPACE_DIR ?? path.join(e.AGENT_RUNS_DATA_DIR, 'workspaces'));
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    host: e.HOST,
    trustProxyHops: e.TRUST_PROXY_HOPS,
    publicUrl,
    dataDir: path.resolve(e.AGENT_RUNS_DATA_DIR),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    database: {
      url: e.DATABASE_URL,
      embeddedPort: e.EMBEDDED_POSTGRES_PORT,
      queryTimeoutMs: e.DATABASE_QUERY_TIMEOUT_SECONDS * 1000,
    },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      cliPath: e.TEMPORAL_CLI_PATH,
      devPort: e.TEMPORAL_DEV_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      uiUrl: (
        e.TEMPORAL_UI_URL ?? (e.TEMPORAL_ADDRESS === undefined ? `http://localhost:${e.TEMPORAL_UI_PORT}` : undefined)
      )?.replace(/\/+$/, ''),
      rpcTimeoutMs: e.TEMPORAL_RPC_TIMEOUT_SECONDS * 1000,
    },
    models: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      anthropic: { apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL },
      prices: parseModelMap(
        'MODEL_PRICES',
        e.MODEL_PRICES,
        z.strictObject({ input: z.number().min(0), output: z.number().min(0) }),
        DEFAULT_PRICES,
        '{"openai/gpt-4o":{"input":2.5,"output":10}}',
      ),
      contextTokens: parseModelMap(
        'MODEL_CONTEXT_TOKENS',
        e.MODEL_CONTEXT_TOKENS,
        z.number().int().min(1000),
        DEFAULT_CONTEXT_TOKENS,
        '{"openai/my-model":32000}',
      ),
      defaultContextTokens: e.AGENT_DEFAULT_CONTEXT_TOKENS,
      defaultModel: e.AGENT_DEFAULT_MODEL,
      requestTimeoutSeconds: e.MODEL_REQUEST_TIMEOUT_SECONDS,
      retry: {
        maxAttempts: e.MODEL_RETRY_MAX_ATTEMPTS,
        initialIntervalMs: e.MODEL_RETRY_INITIAL_INTERVAL_MS,
        maxIntervalMs: e.MODEL_RETRY_MAX_INTERVAL_MS,
      },
    },
    idleTimeoutMinutes: Math.min(e.AGENT_IDLE_TIMEOUT_MINUTES, e.AGENT_MAX_IDLE_TIMEOUT_MINUTES),
    maxIdleTimeoutMinutes: e.AGENT_MAX_IDLE_TIMEOUT_MINUTES,
    heartbeatTimeoutSeconds: e.ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS,
    errorReferenceBaseUrl: (e.ERROR_REFERENCE_BASE_URL ?? `${publicUrl}/errors`).replace(/\/+$/, ''),
    agent: {
      maxSteps: e.AGENT_MAX_STEPS,
      maxTokens: e.AGENT_MAX_TOKENS,
      commandTimeoutSeconds: e.AGENT_COMMAND_TIMEOUT_SECONDS,
      toolOutputLimitBytes: e.AGENT_TOOL_OUTPUT_LIMIT_BYTES,
    },
    orchestration: {
      maxDepth: e.ORCHESTRATION_MAX_DEPTH,
      maxChildrenPerRun: e.ORCHESTRATION_MAX_CHILDREN_PER_RUN,
    },
    workspace: {
      dir: workspaceDir,
      gitBaseUrl: e.GIT_BASE_URL.replace(/\/+$/, ''),
      gitToken: e.GIT_TOKEN,
      gitAllowedOwners: e.GIT_ALLOWED_OWNERS ? commaList(e.GIT_ALLOWED_OWNERS).map((o) => o.toLowerCase()) : undefined,
      setupCommandTimeoutSeconds: e.SETUP_COMMAND_TIMEOUT_SECONDS,
      scheduleToStartSeconds: e.WORKSPACE_SCHEDULE_TO_START_SECONDS,
    },
    sandbox: {
      kind: e.AGENT_SANDBOX,
      bwrapPath: e.AGENT_SANDBOX_BWRAP_PATH,
      uid: e.AGENT_SANDBOX_UID,
      readonlyPaths: commaList(e.AGENT_SANDBOX_READONLY_PATHS).map((p) => path.resolve(p)),
      limits: {
        memoryMb: e.AGENT_SANDBOX_MEMORY_MB,
        maxProcesses: e.AGENT_SANDBOX_MAX_PROCESSES,
        maxFileSizeMb: e.AGENT_SANDBOX_MAX_FILE_SIZE_MB,
        cpuSeconds: e.AGENT_SANDBOX_CPU_SECONDS,
        maxOpenFiles: e.AGENT_SANDBOX_MAX_OPEN_FILES,
      },
      runLimits: e.AGENT_RUN_LIMITS,
      cpus: e.AGENT_SANDBOX_CPUS,
      workspaceMaxBytes: e.AGENT_WORKSPACE_MAX_BYTES,
    },
    network: {
      defaultPolicy: parseNetworkPolicy(e.AGENT_NETWORK_DEFAULT),
      sandboxAllowedPrivateHosts: commaList(e.AGENT_NETWORK_ALLOWED_PRIVATE_HOSTS),
      outboundAllowedPrivateHosts: commaList(e.OUTBOUND_ALLOWED_PRIVATE_HOSTS),
    },
    secretsEncryptionKey: e.SECRETS_ENCRYPTION_KEY,
    reconcileIntervalSeconds: e.RECONCILE_INTERVAL_SECONDS,
    downloadUrlTtlSeconds: e.DOWNLOAD_URL_TTL_SECONDS,
    sseHeartbeatSeconds: e.SSE_HEARTBEAT_SECONDS,
    sseCaps: { total: e.SSE_MAX_STREAMS, perClient: e.SSE_MAX_STREAMS_PER_CLIENT, perRun: e.SSE_MAX_STREAMS_PER_RUN },
    webhooks: {
      timeoutSeconds: e.WEBHOOK_TIMEOUT_SECONDS,
      retry: {
        initialIntervalMs: e.WEBHOOK_RETRY_INITIAL_INTERVAL_MS,
        maxIntervalMs: Math.max(e.WEBHOOK_RETRY_MAX_INTERVAL_MS, e.WEBHOOK_RETRY_INITIAL_INTERVAL_MS),
        windowSeconds: e.WEBHOOK_RETRY_WINDOW_SECONDS,
      },
      logRetentionDays: e.WEBHOOK_LOG_RETENTION_DAYS,
    },
    quotas: {
      requestsPerMinute: e.RATE_LIMIT_REQUESTS_PER_MINUTE,
      unauthenticatedPerMinute: e.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE,
      teamMaxRunsPerHour: e.TEAM_MAX_RUNS_PER_HOUR,
      teamMaxConcurrentRuns: e.TEAM_MAX_CONCURRENT_RUNS,
      teamMaxSchedules: e.TEAM_MAX_SCHEDULES,
      teamMaxWebhooks: e.TEAM_MAX_WEBHOOKS,
      teamMaxAgents: e.TEAM_MAX_AGENTS,
      teamMaxEnvironments: e.TEAM_MAX_ENVIRONMENTS,
    },
    metrics: { bearerToken: e.METRICS_BEARER_TOKEN, workerPort: e.WORKER_METRICS_PORT },
    worker: {
      id: e.WORKER_ID ?? `${os.hostname()}-${createHash('sha256').update(workspaceDir).digest('hex').slice(0, 12)}`,
      maxConcurrentRuns: e.WORKER_MAX_CONCURRENT_RUNS,
      leaseSeconds: e.WORKER_LEASE_SECONDS,
      sweepIntervalSeconds: e.WORKSPACE_SWEEP_INTERVAL_SECONDS,
    },
    tracing: tracingConfig(e),
  };
}
