import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTE_KEYS } from '../workflows/run-contract';
import { dyingWithThisProcess, stopChild } from './child-process';
import type { TemporalCliSource } from './temporal-cli';

export interface DevServerOptions {
  source: TemporalCliSource;
  namespace: string;
  port: number;
  uiPort: number;
  /** Its HTTP API and its own `/metrics`: unused here, but the CLI has no way to turn them off. */
  httpPort: number;
  metricsPort: number;
  /** Where its pid is kept while it runs, for a later start to stop it if this process dies first. */
  pidFile?: string;
  /** SQLite file that keeps workflows across restarts; in memory when absent. */
  dbFile?: string;
  logFile: string;
  ui?: boolean;
  /** Server dynamic configuration, e.g. a lower history size at which continue-as-new is suggested. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

export interface RunningDevServer {
  address: string;
  uiUrl?: string;
  /** The server's process, where this module started it (not for the SDK download). */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * Dynamic configuration every embedded server gets (a caller's `dynamicConfig` goes on top).
 *
 * The history service hands each new task (an activity to dispatch, a workflow task after an
 * activity completed) to matching through its shard's transfer queue, whose reader polls at most
 * `history.transferProcessorMaxPollRPS` times a second (default 20). The dev server has one
 * shard, so every activity round trip waited up to 50 ms there, twice: 99 ms of an agent step's
 * 99 against 69 ms with a reader that may poll every millisecond (`npm run bench:steps`). The
 * same key is set for the docker-compose server (deploy/temporal/dynamicconfig.yaml).
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Record<string, string | number | boolean> = {
  'history.transferProcessorMaxPollRPS': 1000,
};

/**
 * The flags that pin every port the dev server lets us set: gRPC, HTTP API, metrics, and the UI
 * (or none). pprof stays off (the CLI's default). Its history, matching and worker services still
 * take a free loopback port each: the CLI has no flag for them.
 */
function portFlags(options: DevServerOptions, ui: boolean): string[] {
  return [
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--http-port',
    String(options.httpPort),
    '--metrics-port',
    String(options.metricsPort),
    ...(ui ? ['--ui-port', String(options.uiPort)] : ['--headless']),
  ];
}

function dynamicConfigFlags(dynamicConfig: Record<string, string | number | boolean>): string[] {
  return Object.entries(dynamicConfig).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
}

/** Starts `temporal server start-dev` with the project's search attributes and waits until it answers. */
export async function startTemporalDevServer(options: DevServerOptions): Promise<RunningDevServer> {
  const address = `127.0.0.1:${options.port}`;
  const dynamicConfig = { ...DEV_SERVER_DYNAMIC_CONFIG, ...options.dynamicConfig };
  const ui = options.ui ?? true;
  const uiUrl = ui ? `http://localhost:${options.uiPort}` : undefined;
  if (options.source.kind === 'sdk-download') {
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'cached-download', downloadDir: options.source.downloadDir },
        namespace: options.namespace,
        ip: '127.0.0.1',
        port: options.port,
        ui,
        uiPort: ui ? options.uiPort : undefined,
        dbFilename: options.dbFile,
        searchAttributes: SEARCH_ATTRIBUTE_KEYS,
        // The SDK sets the rest of portFlags' ports itself.
        extraArgs: [
          '--http-port',
          String(options.httpPort),
          '--metrics-port',
          String(options.metricsPort),
          ...dynamicConfigFlags(dynamicConfig),
        ],
      },
    });
    return { address, uiUrl, stop: () => env.teardown() };
  }

  mkdirSync(path.dirname(options.logFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    ...portFlags(options, ui),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
    ...SEARCH_ATTRIBUTE_KEYS.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
    ...dynamicConfigFlags(dynamicConfig),
  ];
  const log = createWriteStream(options.logFile, { flags: 'a' });
  // SIGTERM from the kernel if this process dies without stopping it: it must not outlive us on its ports.
  const command = dyingWithThisProcess(options.source.path, args, 'SIGTERM');
  // Its own process group: Ctrl-C reaches only this process, which stops the workers before it.
  const child = spawn(command.command, command.args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  if (options.pidFile && child.pid !== undefined) writeFileSync(options.pidFile, `${child.pid}\n`);
  const stop = async () => {
    await stopChild(child);
    if (options.pidFile) rmSync(options.pidFile, { force: true });
  };
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  try {
    await waitForTemporal(address, options.namespace, () => exited, options.logFile);
  } catch (err) {
    // Never leave a half-started server holding the port for the next attempt.
    await stop();
    throw err;
  }
  return { address, uiUrl, pid: child.pid, stop };
}

async function waitForTemporal(
  address: string,
  namespace: string,
  exited: () => string | undefined,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const gone = exited();
    if (gone) throw new Error(`Temporal dev server ${gone}; see ${logFile}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`Temporal dev server did not become ready at ${address}: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
