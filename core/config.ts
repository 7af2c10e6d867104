import path from 'node:path';
import { z } from 'zod';

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

  DATABASE_URL: optionalString,
  EMBEDDED_POSTGRES_PORT: intFrom(54329, 1, 65535),

  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('agent-runs'),
  TEMPORAL_CLI_PATH: optionalString,
  TEMPORAL_DEV_PORT: intFrom(7233, 1, 65535),
  TEMPORAL_UI_PORT: intFrom(8233, 1, 65535),

  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: z.url().default('https://api.openai.com/v1'),
  AGENT_DEFAULT_MODEL: z.string().default('openai/gpt-4o-mini'),
  AGENT_IDLE_TIMEOUT_MINUTES: intFrom(10, 0, 1440),
  MODEL_REQUEST_TIMEOUT_SECONDS: intFrom(600, 1, 3600),
  MODEL_RETRY_MAX_ATTEMPTS: intFrom(6, 1, 100),
  MODEL_RETRY_INITIAL_INTERVAL_MS: intFrom(1000, 1, 3_600_000),
  MODEL_RETRY_MAX_INTERVAL_MS: intFrom(60_000, 1, 3_600_000),
  ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: intFrom(10, 1, 600),

  ERROR_REFERENCE_BASE_URL: optionalString.pipe(z.url().optional()),
});

export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  dataDir: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  database: { url?: string; embeddedPort: number };
  temporal: {
    address?: string;
    namespace: string;
    taskQueue: string;
    cliPath?: string;
    devPort: number;
    uiPort: number;
  };
  models: {
    openai: { apiKey?: string; baseUrl: string };
    defaultModel: string;
    requestTimeoutSeconds: number;
    retry: { maxAttempts: number; initialIntervalMs: number; maxIntervalMs: number };
  };
  idleTimeoutMinutes: number;
  heartbeatTimeoutSeconds: number;
  errorReferenceBaseUrl: string;
}

export class ConfigError extends Error {}

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
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    dataDir: path.resolve(e.AGENT_RUNS_DATA_DIR),
    logLevel: e.LOG_LEVEL,
    database: { url: e.DATABASE_URL, embeddedPort: e.EMBEDDED_POSTGRES_PORT },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      cliPath: e.TEMPORAL_CLI_PATH,
      devPort: e.TEMPORAL_DEV_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
    },
    models: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      defaultModel: e.AGENT_DEFAULT_MODEL,
      requestTimeoutSeconds: e.MODEL_REQUEST_TIMEOUT_SECONDS,
      retry: {
        maxAttempts: e.MODEL_RETRY_MAX_ATTEMPTS,
        initialIntervalMs: e.MODEL_RETRY_INITIAL_INTERVAL_MS,
        maxIntervalMs: e.MODEL_RETRY_MAX_INTERVAL_MS,
      },
    },
    idleTimeoutMinutes: e.AGENT_IDLE_TIMEOUT_MINUTES,
    heartbeatTimeoutSeconds: e.ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS,
    errorReferenceBaseUrl: (e.ERROR_REFERENCE_BASE_URL ?? `${publicUrl}/errors`).replace(/\/+$/, ''),
  };
}
