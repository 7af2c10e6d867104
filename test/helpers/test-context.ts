import type { Server } from 'node:http';
import type { KeyRole } from '../../db/rows/api-key';
import { randomBytes } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NativeConnection } from '@temporalio/worker';
import type { DestinationStream } from 'pino';
import supertest from 'supertest';
import type { DataSource } from 'typeorm';
import { createApp } from '../../api/app';
import { closeServer, listen } from '../../api/server';
import { loadConfig, type Config } from '../../core/config';
import { createLogger, loggerOptions } from '../../core/logger';
import { createApiKeyService } from '../../services/keys/api-key-service';
import { runMigrations } from '../../db/data-source';
import { connectTemporalClient, connectWorkerConnection, openDataSource } from '../../infra/connections';
import { startTracing, type Tracing } from '../../infra/tracing';
import { installTemporalRuntime } from '../../infra/temporal-runtime';
import { openObjectStore } from '../../infra/object-store/create-object-store';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { createWorker, type RunWorker } from '../../worker/create-worker';
import type { SweepResult } from '../../activities/workspace/workspace-sweeper';
import type { TestStackInfo } from '../stack/test-stack';
import { freePort } from './free-port';
import { ScriptedModelServer } from './scripted-model';

/** Models test files name in runs, schedules, agents and factories (besides the catalog's built-in ones). */
const TEST_MODELS = [
  'openai/test',
  'openai/x',
  'openai/m',
  'openai/m-one',
  'openai/shape-model',
  'openai/request-model',
  'openai/identity-model',
  'openai/foreman-model',
  'openai/lead-model',
  'openai/fixer-model',
  'openai/better-model',
  'anthropic/claude-test',
  'anthropic/claude-x',
  'anthropic/x',
  'anthropic/claude-sonnet-4',
];

export function testStack(): TestStackInfo {
  const raw = process.env.AGENT_RUNS_TEST_STACK;
  if (!raw) throw new Error('AGENT_RUNS_TEST_STACK is not set: run the tests with `npm test` (jest global setup).');
  return JSON.parse(raw) as TestStackInfo;
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/**
 * The object store variables of a test context: the test run's directory (the default), or its
 * S3 server (test-stack.ts) with the credentials in the AWS SDK's variables, as a process that
 * reads its environment (spawnWorker) gets them. One store per test run, shared by its contexts.
 */
export function objectStoreEnv(stack: TestStackInfo, kind: 'directory' | 's3'): Record<string, string> {
  if (kind === 'directory') return { OBJECT_STORE: 'directory', OBJECT_STORE_DIR: path.join(stack.dataDir, 'objects') };
  return {
    OBJECT_STORE: 's3',
    OBJECT_STORE_S3_BUCKET: stack.s3.bucket,
    OBJECT_STORE_S3_ENDPOINT: stack.s3.endpoint,
    OBJECT_STORE_S3_PREFIX: 'agent-runs',
    AWS_ACCESS_KEY_ID: stack.s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: stack.s3.secretAccessKey,
  };
}

export interface TestContext {
  config: Config;
  stack: TestStackInfo;
  /** Where the API and worker of this context keep runs' files' bytes. */
  objectStore: ObjectStore;
  /** The variables of that store, for processes started apart (objectStoreEnv). */
  objectStoreEnv: Record<string, string>;
  dataSource: DataSource;
  client: Client;
  connection: Connection;
  model: ScriptedModelServer;
  /** On when `env` sets OTEL_EXPORTER_OTLP_ENDPOINT; the API and worker of this context share it. */
  tracing?: Tracing;
  baseUrl: string;
  api: ReturnType<typeof supertest>;
  /** A fresh team with a personal key (a member key unless `role` says admin); returns the raw key and the creator uid. */
  newTeamKey(
    kind?: 'personal' | 'agent',
    team?: string,
    role?: KeyRole,
  ): Promise<{ key: string; uid: string; team: string; id: string }>;
  /** Starts the context's worker; with `config`, under that instead of the context's (a restart with other settings). */
  startWorker(config?: Config): Promise<void>;
  stopWorker(): Promise<void>;
  /** One sweep of the running worker's workspaces, now (or the one under way). */
  sweepWorkspaces(): Promise<SweepResult>;
  /** The Prometheus text of the running worker's own room (run slots, workspace disk), as its `/metrics` serves it. */
  workerMetrics(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Per test file: a worker on its own task queue, the API on a real port, and a scripted
 * model server, all against the run's shared PostgreSQL and Temporal. The service's log (at
 * LOG_LEVEL, default `error` so test output stays readable) goes to `logDestination` or stderr;
 * the first context of a file also routes the Temporal SDK's log there.
 */
export async function createTestContext(
  options: {
    env?: Record<string, string>;
    worker?: boolean;
    temporalAddress?: string;
    databaseUrl?: string;
    logDestination?: DestinationStream;
    /** The test run's object store directory (default), or its S3 server. */
    objectStore?: 'directory' | 's3';
  } = {},
): Promise<TestContext> {
  // A test may bring its own Temporal server or PostgreSQL (to stop or freeze it).
  const stack = {
    ...testStack(),
    ...(options.temporalAddress ? { temporalAddress: options.temporalAddress } : {}),
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
  };
  // Known before the app is built, so PUBLIC_URL (session links, error `type` URLs) is right.
  const port = await freePort();
  const model = new ScriptedModelServer();
  const modelUrl = await model.start();
  const storeEnv = objectStoreEnv(stack, options.objectStore ?? 'directory');
  const config = loadConfig({
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_TASK_QUEUE: uniqueName('test-queue'),
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: modelUrl,
    // The same scripted server speaks Anthropic's and Gemini's protocols (their base URLs have no version).
    ANTHROPIC_BASE_URL: modelUrl.replace(/\/v1$/, ''),
    GEMINI_BASE_URL: modelUrl.replace(/\/v1$/, ''),
    AGENT_DEFAULT_MODEL: 'openai/test-model',
    // The models the tests name besides the default: this deployment serves them (the scripted
    // server answers any), with the default context window, so runs naming them are accepted.
    MODEL_CONTEXT_TOKENS: JSON.stringify(Object.fromEntries(TEST_MODELS.map((id) => [id, 128_000]))),
    MODEL_RETRY_INITIAL_INTERVAL_MS: '100',
    MODEL_RETRY_MAX_INTERVAL_MS: '200',
    MODEL_RETRY_MAX_ATTEMPTS: '3',
    ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '5',
    LOG_LEVEL: 'error',
    // The shared Temporal dev server, on two cores beside two test files and a workflow bundling,
    // can stall past the 5 s default (a schedule list answered 503 once); tests of the deadline set their own.
    TEMPORAL_RPC_TIMEOUT_SECONDS: '15',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    // The data directory of the service's own files (the object store's directory, say): the test run's, never ./.data.
    AGENT_RUNS_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-data-')),
    AGENT_RUNS_WORKSPACE_DIR: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-')),
    IMAGE_CACHE_DIR: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-images-')),
    WORKSPACE_SCHEDULE_TO_START_SECONDS: '5',
    WORKER_LEASE_SECONDS: '5',
    // A key of its own, unless the test brings a keyring (the two must agree: core/secrets-keyring.ts).
    ...(options.env?.SECRETS_ENCRYPTION_KEYS ? {} : { SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') }),
    // Tests poll every 50 ms with one key; test/rate-limits.test.ts sets its own limit.
    RATE_LIMIT_REQUESTS_PER_MINUTE: '0',
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '0',
    RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE: '0',
    ...storeEnv,
    ...options.env,
  });
  const logger = createLogger(config.logLevel, 'test', {
    ...loggerOptions(config),
    destination: options.logDestination,
  });
  installTemporalRuntime({ logger });
  const dataSource = await openDataSource(stack.databaseUrl, {
    poolSize: 10,
    queryTimeoutMs: config.database.queryTimeoutMs,
    logger,
  });
  if (options.databaseUrl) await runMigrations(dataSource);
  const tracing = startTracing(config, 'agent-runs-test');
  const { connection, client } = await connectTemporalClient(
    { address: stack.temporalAddress, namespace: config.temporal.namespace },
    tracing,
  );
  // The credentials given, not taken from this process's environment (the SDK's chain would read it).
  const { accessKeyId, secretAccessKey } = stack.s3;
  const objectStore = await openObjectStore(config.objectStore, { credentials: { accessKeyId, secretAccessKey } });
  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger,
    objectStore,
  });
  const server: Server = await listen(app, port, '127.0.0.1');
  const baseUrl = config.publicUrl;

  let worker: RunWorker | undefined;
  let workerConnection: NativeConnection | undefined;
  let workerRun: Promise<void> | undefined;
  const ctx: TestContext = {
    config,
    stack,
    objectStore,
    objectStoreEnv: storeEnv,
    dataSource,
    client,
    connection,
    model,
    tracing,
    baseUrl,
    api: supertest(baseUrl),
    async newTeamKey(kind = 'personal', team = uniqueName('team'), role: KeyRole = 'member') {
      const name = uniqueName(kind === 'personal' ? 'user' : 'agent');
      const created = await createApiKeyService({ config, dataSource }).create({ kind, name, team, role });
      return { key: created.rawKey, uid: created.principalUid, team, id: created.id };
    },
    async startWorker(workerConfig = config) {
      workerConnection = await connectWorkerConnection({ address: stack.temporalAddress });
      worker = await createWorker({
        config: workerConfig,
        dataSource,
        connection: workerConnection,
        logger,
        workflowBundlePath: stack.workflowBundlePath,
        platformEndpoints: [stack.databaseUrl, stack.temporalAddress],
        tracing,
        objectStore,
      });
      workerRun = worker.run();
    },
    sweepWorkspaces() {
      if (!worker) throw new Error('no worker runs in this context');
      return worker.sweepWorkspaces();
    },
    workerMetrics() {
      if (!worker) throw new Error('no worker runs in this context');
      return worker.metrics();
    },
    async stopWorker() {
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      await workerRun;
      await workerConnection?.close();
      workerConnection = undefined;
      workerRun = undefined;
      worker = undefined;
    },
    async close() {
      await ctx.stopWorker();
      await closeServer(server);
      await model.stop();
      await connection.close();
      await dataSource.destroy();
      await tracing?.shutdown();
    },
  };
  if (options.worker ?? true) await ctx.startWorker();
  return ctx;
}

/** Polls `read` until `done` holds or the deadline passes; returns the last value. */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await read();
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The variables that give another process (a worker, an API, a command) the context's keys:
 * SECRETS_ENCRYPTION_KEYS with each key under its id, and no SECRETS_ENCRYPTION_KEY of this
 * process's environment beside it.
 */
export function secretsKeyringEnv(c: Pick<TestContext, 'config'>): {
  SECRETS_ENCRYPTION_KEY: string;
  SECRETS_ENCRYPTION_KEYS: string;
} {
  const ring = c.config.secretsKeyring;
  if (!ring) throw new Error('the context has no secrets keyring');
  return {
    SECRETS_ENCRYPTION_KEY: '',
    SECRETS_ENCRYPTION_KEYS: ring.keys.map(({ id, key }) => `${id}=${key.toString('base64')}`).join(','),
  };
}
