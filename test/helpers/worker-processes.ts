import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { secretsKeyringEnv, waitFor, type TestContext } from './test-context';

const ROOT = path.resolve(__dirname, '..', '..');

/** A worker process (`worker/main.ts`) started the way production starts it. */
export interface WorkerChild {
  proc: ChildProcess;
  spawnedAt: number;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * What every service process a test starts on the context's stack gets (a worker, an API): its
 * PostgreSQL, Temporal and task queue, its secrets key and object store, quiet logs.
 */
export function stackProcessEnv(c: TestContext): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: c.stack.databaseUrl,
    TEMPORAL_ADDRESS: c.stack.temporalAddress,
    TEMPORAL_TASK_QUEUE: c.config.temporal.taskQueue,
    ...secretsKeyringEnv(c),
    AGENT_DEFAULT_MODEL: 'openai/test-model',
    ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3',
    LOG_LEVEL: 'warn',
    // The context's object store: files a worker records, its API serves.
    ...c.objectStoreEnv,
  };
}

/** Starts a worker process on the context's stack and task queue; `env` adds to or overrides its settings. */
export function spawnWorker(
  c: TestContext,
  options: { workspaceDir?: string; workerId?: string; env?: Record<string, string> } = {},
): WorkerChild {
  const spawnedAt = Date.now();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      ...stackProcessEnv(c),
      AGENT_RUNS_WORKSPACE_DIR: options.workspaceDir ?? c.config.workspace.dir,
      // The context's data directory: its object store is the one every worker of the context shares.
      AGENT_RUNS_DATA_DIR: c.config.dataDir,
      WORKER_LEASE_SECONDS: String(c.config.worker.leaseSeconds),
      // The test run's bundle of the workflows' source, made once (test-stack.ts), as in-process workers use it.
      WORKER_WORKFLOW_BUNDLE: c.stack.workflowBundlePath,
      ...(options.workerId ? { WORKER_ID: options.workerId } : {}),
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: c.config.models.openai.baseUrl,
      ANTHROPIC_BASE_URL: c.config.models.anthropic.baseUrl,
      GEMINI_BASE_URL: c.config.models.gemini.baseUrl,
      MODEL_RETRY_INITIAL_INTERVAL_MS: '100',
      // Never the default port: another stack on this machine may have it.
      WORKER_METRICS_PORT: '0',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  proc.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, spawnedAt, output, exited };
}

/** SIGKILLs the worker (if it still runs) and waits for it to be gone. */
export async function killWorker(worker: WorkerChild): Promise<void> {
  if (worker.proc.exitCode === null && worker.proc.signalCode === null) worker.proc.kill('SIGKILL');
  await worker.exited;
}

/** Resolves with `promise`, or rejects when the deadline passes or the worker dies first. */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string, worker: WorkerChild): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; worker output:\n${worker.output.join('')}`),
        ),
      timeoutMs,
    );
  });
  const died = worker.exited.then(({ code, signal }) => {
    throw new Error(
      `worker exited (${signal ?? code}) while waiting for ${what}; its output:\n${worker.output.join('')}`,
    );
  });
  try {
    return await Promise.race([promise, deadline, died]);
  } finally {
    clearTimeout(timer);
  }
}

/** Identities of the workers that polled the context's activity task queue lately. */
export async function activityPollers(c: TestContext): Promise<string[]> {
  const res = await c.connection.workflowService.describeTaskQueue({
    namespace: c.config.temporal.namespace,
    taskQueue: { name: c.config.temporal.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  return (res.pollers ?? []).map((p) => p.identity ?? '');
}

/** Resolves once the worker polls for activities (the SDK's default identity is `pid@host`); returns how long that took. */
export async function waitUntilPolling(c: TestContext, worker: WorkerChild, what: string): Promise<number> {
  const identity = `${worker.proc.pid}@${os.hostname()}`;
  await within(
    waitFor(
      () => activityPollers(c),
      (ids) => ids.includes(identity),
      `${what} (${identity}) to poll`,
      120_000,
    ),
    125_000,
    `${what} to poll`,
    worker,
  );
  return Date.now() - worker.spawnedAt;
}
