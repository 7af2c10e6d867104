import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import {
  commaList,
  ConfigError,
  DEFAULT_CONTEXT_TOKENS,
  DEFAULT_PRICES,
  parseModelMap,
  parseNetworkPolicy,
  parseOtlpHeaders,
  parseEgressCidrs,
  parseForgeWebhookSecrets,
  parseGitForges,
  parseRegistries,
} from './parsers';
import { secretsKeyringFrom, type SecretsKeyring } from '../secrets-keyring';
import { temporalConnectionFrom, type TemporalConnectionSettings } from './temporal-profile';
import { envSchema, type Env } from './variables';

/** Reads and validates configuration; the only place that looks at environment variables. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as in most shells' and compose files' conventions.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return configFrom(parsed.data, temporalConnectionFrom(present as Record<string, string>));
}

/**
 * The service's configuration: what `configFrom` builds from the parsed variables, with each
 * property that may be undefined optional (`tracing?:`).
 */
export type Config = Declared<ReturnType<typeof configFrom>>;
export type SandboxConfig = Config['sandbox'];
export type StreamCaps = Config['sseCaps'];
export type TracingConfig = NonNullable<Config['tracing']>;
export type ObjectStoreConfig = Config['objectStore'];

type Declared<T> = T extends readonly unknown[] | Uint8Array
  ? T
  : T extends object
    ? Flat<
        { [K in keyof T as undefined extends T[K] ? never : K]: Declared<T[K]> } & {
          [K in keyof T as undefined extends T[K] ? K : never]?: Declared<Exclude<T[K], undefined>>;
        }
      >
    : T;
type Flat<T> = { [K in keyof T]: T[K] };

/** The image tools must not share a uid with the runs whose images they write. */
function distinctUid(toolsUid: number, sandboxUid: number): number {
  if (toolsUid === sandboxUid) {
    throw new ConfigError(
      `Invalid configuration:\n  IMAGE_TOOLS_UID: must differ from AGENT_SANDBOX_UID (both are ${toolsUid}): a run's processes must not own the image cache's files`,
    );
  }
  return toolsUid;
}

/** The keyring of SECRETS_ENCRYPTION_KEY(S), checked: a bad key or an inconsistent pair stops the start. */
function secretsKeyringOf(e: Env): SecretsKeyring | undefined {
  try {
    return secretsKeyringFrom(e.SECRETS_ENCRYPTION_KEY, e.SECRETS_ENCRYPTION_KEYS);
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${(err as Error).message}`);
  }
}

/** Where each variable goes in the configuration, and the values computed from several. */
function configFrom(e: Env, temporalConnection: TemporalConnectionSettings) {
  const workspaceDir = path.resolve(e.AGENT_RUNS_WORKSPACE_DIR ?? path.join(e.AGENT_RUNS_DATA_DIR, 'workspaces'));
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    host: e.HOST,
    /** Reverse proxies in front of the API whose X-Forwarded-For is trusted for the client's address (0: none). */
    trustProxyHops: e.TRUST_PROXY_HOPS,
    publicUrl,
    dataDir: path.resolve(e.AGENT_RUNS_DATA_DIR),
    logLevel: e.LOG_LEVEL,
    /** Unset: each entry point's default (`npm start`: pretty on a terminal; otherwise JSON lines). */
    logFormat: e.LOG_FORMAT,
    objectStore: objectStoreFrom(e),
    database: {
      url: e.DATABASE_URL,
      embeddedPort: e.EMBEDDED_POSTGRES_PORT,
      queryTimeoutMs: e.DATABASE_QUERY_TIMEOUT_SECONDS * 1000,
    },
    temporal: {
      /** TEMPORAL_ADDRESS, else the profile's; unset: the dev server `npm start` runs. */
      address: temporalConnection.address,
      namespace: temporalConnection.namespace ?? 'default',
      /** TLS, API key and headers (never logged: see core/logger.ts). */
      connection: temporalConnection,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      cliPath: e.TEMPORAL_CLI_PATH,
      devPort: e.TEMPORAL_DEV_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      devHttpPort: e.TEMPORAL_DEV_HTTP_PORT,
      devMetricsPort: e.TEMPORAL_DEV_METRICS_PORT,
      /** Where operators open the Temporal UI: TEMPORAL_UI_URL, else the embedded server's. */
      uiUrl: (
        e.TEMPORAL_UI_URL ??
        (temporalConnection.address === undefined ? `http://localhost:${e.TEMPORAL_UI_PORT}` : undefined)
      )?.replace(/\/+$/, ''),
      /** Deadline of each call the API makes to Temporal; past it the request answers 503. */
      rpcTimeoutMs: e.TEMPORAL_RPC_TIMEOUT_SECONDS * 1000,
    },
    models: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      anthropic: { apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL },
      gemini: { apiKey: e.GEMINI_API_KEY, baseUrl: e.GEMINI_BASE_URL },
      /** USD per million input and output tokens, by model id. */
      prices: parseModelMap(
        'MODEL_PRICES',
        e.MODEL_PRICES,
        z.strictObject({ input: z.number().min(0), output: z.number().min(0) }),
        DEFAULT_PRICES,
        '{"openai/gpt-4o":{"input":2.5,"output":10}}',
      ),
      /** Context windows in tokens, by model id; `defaultContextTokens` for the others. */
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
    /** Whether member keys may decide a run's waiting calls (admin keys always may). */
    approvalsMembersMayDecide: e.APPROVALS_MEMBERS_MAY_DECIDE === 'true',
    /** The longest idle window a run may ask for. */
    maxIdleTimeoutMinutes: e.AGENT_MAX_IDLE_TIMEOUT_MINUTES,
    heartbeatTimeoutSeconds: e.ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS,
    errorReferenceBaseUrl: (e.ERROR_REFERENCE_BASE_URL ?? `${publicUrl}/errors`).replace(/\/+$/, ''),
    agent: {
      maxSteps: e.AGENT_MAX_STEPS,
      maxTokens: e.AGENT_MAX_TOKENS,
      commandTimeoutSeconds: e.AGENT_COMMAND_TIMEOUT_SECONDS,
      harnessTurnTimeoutSeconds: e.AGENT_HARNESS_TURN_TIMEOUT_SECONDS,
      toolOutputLimitBytes: e.AGENT_TOOL_OUTPUT_LIMIT_BYTES,
    },
    /** Bounds of a factory's run tree: levels below a root run, and runs one run may dispatch. */
    orchestration: {
      maxDepth: e.ORCHESTRATION_MAX_DEPTH,
      maxChildrenPerRun: e.ORCHESTRATION_MAX_CHILDREN_PER_RUN,
    },
    workspace: {
      dir: workspaceDir,
      gitBaseUrl: e.GIT_BASE_URL.replace(/\/+$/, ''),
      gitToken: e.GIT_TOKEN,
      /** GIT_TOKEN may push a run's pull request branch where a team has no credential of its own. */
      gitTokenForPush: e.GIT_TOKEN_FOR_PUSH === 'true',
      /** Author and committer of the worker's commits of a run's changes. */
      gitCommitAuthor: parseCommitAuthor(e.GIT_COMMIT_AUTHOR ?? 'agent-runs <agent-runs@localhost>'),
      /** Lower-cased owners a run's repositories may belong to; undefined allows every owner. */
      gitAllowedOwners: e.GIT_ALLOWED_OWNERS ? commaList(e.GIT_ALLOWED_OWNERS).map((o) => o.toLowerCase()) : undefined,
      /** The forge kind of each repository host (`host[:port]`, lower case): GIT_FORGES over the built-ins. */
      gitForges: parseGitForges(e.GIT_FORGES),
      /** Registries an environment's image may come from; empty allows every registry. */
      imageAllowedRegistries: parseRegistries(e.IMAGE_ALLOWED_REGISTRIES, 'IMAGE_ALLOWED_REGISTRIES'),
      setupCommandTimeoutSeconds: e.SETUP_COMMAND_TIMEOUT_SECONDS,
      scheduleToStartSeconds: e.WORKSPACE_SCHEDULE_TO_START_SECONDS,
    },
    /** Environments' container images on workers: where they are kept, how much, how they are reached. */
    images: {
      cacheDir: path.resolve(e.IMAGE_CACHE_DIR ?? path.join(e.AGENT_RUNS_DATA_DIR, 'images')),
      cacheMaxBytes: e.IMAGE_CACHE_MAX_BYTES,
      insecureRegistries: parseRegistries(e.IMAGE_INSECURE_REGISTRIES, 'IMAGE_INSECURE_REGISTRIES'),
      pullTimeoutSeconds: e.IMAGE_PULL_TIMEOUT_SECONDS,
      snapshotMaxAgeMs: e.ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS * 3_600_000,
      /** Host uid of the image tools' sandboxes (a worker running as root). */
      toolsUid: distinctUid(e.IMAGE_TOOLS_UID, e.AGENT_SANDBOX_UID),
    },
    sandbox: {
      kind: e.AGENT_SANDBOX,
      bwrapPath: e.AGENT_SANDBOX_BWRAP_PATH,
      initPath: e.AGENT_SANDBOX_INIT_PATH,
      /** Host uid given to runs' processes when the worker runs as root. */
      uid: e.AGENT_SANDBOX_UID,
      /** Extra host paths mounted read-only into every sandbox (toolchains outside /usr). */
      readonlyPaths: commaList(e.AGENT_SANDBOX_READONLY_PATHS).map((p) => path.resolve(p)),
      limits: {
        memoryMb: e.AGENT_SANDBOX_MEMORY_MB,
        maxProcesses: e.AGENT_SANDBOX_MAX_PROCESSES,
        maxFileSizeMb: e.AGENT_SANDBOX_MAX_FILE_SIZE_MB,
        cpuSeconds: e.AGENT_SANDBOX_CPU_SECONDS,
        maxOpenFiles: e.AGENT_SANDBOX_MAX_OPEN_FILES,
      },
      /**
       * `enforce`: every run's processes share one cgroup with AGENT_SANDBOX_MEMORY_MB,
       * AGENT_SANDBOX_MAX_PROCESSES and a CPU share; a worker that cannot make one refuses to start.
       * `off`: the per-process limits alone (the operator's explicit choice, logged loudly).
       */
      runLimits: e.AGENT_RUN_LIMITS,
      /** CPUs one run may use at most (0: an equal share with the other runs, no cap). */
      cpus: e.AGENT_SANDBOX_CPUS,
      /** Bytes a run's files (workspace, home, tmp) may take on disk; 0: no limit. */
      workspaceMaxBytes: e.AGENT_WORKSPACE_MAX_BYTES,
      /**
       * `enforce`: each run's files on a filesystem of AGENT_WORKSPACE_MAX_BYTES of their own; a
       * worker that cannot make one refuses to start. `measure`: measured (du), stopped after the fact.
       */
      diskLimits: e.AGENT_DISK_LIMITS,
    },
    network: {
      /** Policy of environments that set none: `open`, `none`, or allowed domains. */
      defaultPolicy: parseNetworkPolicy(e.AGENT_NETWORK_DEFAULT),
      /** Private hosts and CIDRs the sandbox egress proxy may reach (still never the platform's own). */
      sandboxAllowedPrivateHosts: commaList(e.AGENT_NETWORK_ALLOWED_PRIVATE_HOSTS),
      /** Private hosts and CIDRs the worker may connect to for MCP servers and webhooks. */
      outboundAllowedPrivateHosts: commaList(e.OUTBOUND_ALLOWED_PRIVATE_HOSTS),
      /** The networks runs' traffic leaves from, canonical and deduplicated; empty when not known. */
      egressCidrs: parseEgressCidrs(e.EGRESS_CIDRS),
    },
    /**
     * The keys of stored credentials and signed URLs (SECRETS_ENCRYPTION_KEYS, else
     * SECRETS_ENCRYPTION_KEY); unset: the key file of the data dir (infra/secrets-key.ts).
     */
    secretsKeyring: secretsKeyringOf(e),
    /** How often the API looks for runs whose workflow closed without finishing them. */
    reconcileIntervalSeconds: e.RECONCILE_INTERVAL_SECONDS,
    /**
     * RESTORE_MODE: the database was restored from a backup and not yet checked against Temporal.
     * What acts on the database's word alone (the reconciler, sweeps, retention, the object
     * collector) only logs, and no new run, fork or follow-up is taken.
     */
    restoreMode: e.RESTORE_MODE === 'true',
    /** How long a signed download URL (artifacts, handoff files) works. */
    downloadUrlTtlSeconds: e.DOWNLOAD_URL_TTL_SECONDS,
    /** How long a run's signed `session_link` works, from the read of the run that gave it. */
    sessionLinkTtlSeconds: e.SESSION_LINK_TTL_SECONDS,
    /** Seconds between the comments an event stream sends to keep proxies from closing it. */
    sseHeartbeatSeconds: e.SSE_HEARTBEAT_SECONDS,
    /** Event streams one API process serves at once: in all, to one client address, of one run. */
    sseCaps: { total: e.SSE_MAX_STREAMS, perClient: e.SSE_MAX_STREAMS_PER_CLIENT, perRun: e.SSE_MAX_STREAMS_PER_RUN },
    /** Delivery of webhooks (workers): each POST's timeout, the retries' backoff and how long they go on. */
    webhooks: {
      timeoutSeconds: e.WEBHOOK_TIMEOUT_SECONDS,
      retry: {
        initialIntervalMs: e.WEBHOOK_RETRY_INITIAL_INTERVAL_MS,
        maxIntervalMs: Math.max(e.WEBHOOK_RETRY_MAX_INTERVAL_MS, e.WEBHOOK_RETRY_INITIAL_INTERVAL_MS),
        windowSeconds: e.WEBHOOK_RETRY_WINDOW_SECONDS,
      },
      /** Finished deliveries older than this leave the delivery log. */
      logRetentionDays: e.WEBHOOK_LOG_RETENTION_DAYS,
    },
    /** Pull requests' status from their forges: webhooks' secrets by host (lower case), and the poll where there is none. */
    forgeStatus: {
      webhookSecrets: parseForgeWebhookSecrets(e.FORGE_WEBHOOK_SECRETS),
      pollStaleSeconds: e.PULL_REQUEST_POLL_STALE_MINUTES * 60,
    },
    /** Rate limits and quotas (0 = off), kept in PostgreSQL so every API instance and worker shares them. */
    quotas: {
      /** Requests one API key may make per minute. */
      requestsPerMinute: e.RATE_LIMIT_REQUESTS_PER_MINUTE,
      /** Requests without a valid key one client address may make per minute (per API process). */
      unauthenticatedPerMinute: e.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE,
      /** `POST /factory-files/validate` requests one client address may make per minute (per API process). */
      factoryValidatePerMinute: e.RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE,
      /** Runs one team may create per hour (API, factory dispatches, schedule firings, dispatch_agent). */
      teamMaxRunsPerHour: e.TEAM_MAX_RUNS_PER_HOUR,
      /** Runs of one team admitted (QUEUED to INPROGRESS) at once; the others wait QUEUED for a slot. */
      teamMaxConcurrentRuns: e.TEAM_MAX_CONCURRENT_RUNS,
      /** How many of each resource one team may have (0: no cap); past it a create is 409. */
      teamMaxSchedules: e.TEAM_MAX_SCHEDULES,
      teamMaxWebhooks: e.TEAM_MAX_WEBHOOKS,
      teamMaxSecrets: e.TEAM_MAX_SECRETS,
      teamMaxAgents: e.TEAM_MAX_AGENTS,
      teamMaxEnvironments: e.TEAM_MAX_ENVIRONMENTS,
      /** Bytes of runs' files one team may keep (0: no cap). */
      teamMaxStoredBytes: e.TEAM_MAX_STORED_BYTES,
    },
    /** The object collector: an unnamed object goes once two passes this far apart found it so. */
    objectGraceSeconds: e.OBJECT_STORE_GRACE_SECONDS,
    /** Ended runs are deleted this many days after they ended (undefined: kept until deleted). */
    runRetentionDays: e.RUN_RETENTION_DAYS,
    /** Audit events are deleted this many days after they occurred (undefined: kept for ever). */
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    /** The actor operator commands record (undefined: `<OS user>@<host>`). */
    auditOperator: e.AUDIT_OPERATOR,
    metrics: {
      /** When set, `GET /metrics` (API and workers) requires `Authorization: Bearer <it>`; unset, only on a loopback HOST. */
      bearerToken: e.METRICS_BEARER_TOKEN,
      /** Port of a worker's `/metrics` (on HOST); 0: no metrics server and no Temporal SDK exporter. */
      workerPort: e.WORKER_METRICS_PORT,
    },
    worker: {
      /** Names the worker's workspace queue; stable across restarts on the same volume. */
      id: e.WORKER_ID ?? `${os.hostname()}-${createHash('sha256').update(workspaceDir).digest('hex').slice(0, 12)}`,
      /** Workspaces (runs) one worker holds at once; provisioning waits for a worker with room. */
      maxConcurrentRuns: e.WORKER_MAX_CONCURRENT_RUNS,
      /** A worker whose lease is older than this is dead: its runs provision elsewhere. */
      leaseSeconds: e.WORKER_LEASE_SECONDS,
      /** On SIGTERM: how long steps in flight may finish before the worker stops anyway. */
      drainSeconds: e.WORKER_DRAIN_SECONDS,
      /** How often a worker removes the workspaces on its disk that nothing will use again. */
      sweepIntervalSeconds: e.WORKSPACE_SWEEP_INTERVAL_SECONDS,
      /** A workflow bundle made beforehand; undefined: the build's, else bundled at start. */
      workflowBundle: e.WORKER_WORKFLOW_BUNDLE,
    },
    /** OpenTelemetry tracing; undefined (off) unless an OTLP endpoint is set. */
    tracing: tracingFrom(e),
  };
}

/** Where runs' files' bytes go: a directory (the default, under the data directory) or an S3 bucket. */
function objectStoreFrom(e: Env) {
  const kind = e.OBJECT_STORE ?? (e.OBJECT_STORE_S3_BUCKET ? 's3' : 'directory');
  if (kind === 'directory') {
    return {
      kind,
      dir: path.resolve(e.OBJECT_STORE_DIR ?? path.join(e.AGENT_RUNS_DATA_DIR, 'objects')),
    } as const;
  }
  if (!e.OBJECT_STORE_S3_BUCKET) {
    throw new ConfigError(
      'Invalid configuration:\n  OBJECT_STORE_S3_BUCKET: must be set with OBJECT_STORE=s3 (the bucket, made beforehand)',
    );
  }
  const endpoint = e.OBJECT_STORE_S3_ENDPOINT;
  return {
    kind,
    bucket: e.OBJECT_STORE_S3_BUCKET,
    /** Segments without a slash at either end; undefined: keys from the bucket's root. */
    prefix: e.OBJECT_STORE_S3_PREFIX,
    endpoint,
    /** Undefined: the AWS SDK's own (AWS_REGION, the profile's). */
    region: e.OBJECT_STORE_S3_REGION ?? (endpoint ? 'us-east-1' : undefined),
    forcePathStyle: (e.OBJECT_STORE_S3_FORCE_PATH_STYLE ?? (endpoint ? 'true' : 'false')) === 'true',
  } as const;
}

/** Traces go out when an OTLP endpoint is set (per the OpenTelemetry conventions: `/v1/traces` is appended to the generic one). */
function tracingFrom(e: Env) {
  if (e.OTEL_SDK_DISABLED === 'true') return undefined;
  const tracesUrl =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!tracesUrl) return undefined;
  return {
    /** Where spans are POSTed (OTLP/HTTP, JSON). */
    tracesUrl,
    /** Sent with every export (a collector's API key, say). */
    headers: {
      ...parseOtlpHeaders('OTEL_EXPORTER_OTLP_HEADERS', e.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseOtlpHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS', e.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    /** OTEL_SERVICE_NAME; each entry point has its own default. */
    serviceName: e.OTEL_SERVICE_NAME,
  };
}

/** `Name <email>` (validated by its variable's schema) as git's author fields. */
function parseCommitAuthor(value: string): { name: string; email: string } {
  const at = value.lastIndexOf(' <');
  return { name: value.slice(0, at).trim(), email: value.slice(at + 2, -1) };
}
