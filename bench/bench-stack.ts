import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import type { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createApp } from '../api/app';
import { listen } from '../api/server';
import { loadConfig, type Config } from '../core/config';
import type { Logger } from '../core/logger';
import { createApiKeyService } from '../services/keys/api-key-service';
import { runMigrations } from '../db/data-source';
import { openDataSource } from '../infra/connections';
import { startDependencies } from '../infra/runtime';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import type { SecretsKeyring } from '../core/secrets-keyring';
import { freePort } from '../test/helpers/free-port';
import { benchLimits } from './bench-limits';

/** The value below which `p` % of `values` lie. */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

/** Runs `call` `count` times, `concurrency` at a time; resolves with each call's latency (ms). */
export async function timedConcurrently(
  count: number,
  concurrency: number,
  call: () => Promise<unknown>,
): Promise<number[]> {
  const latencies: number[] = [];
  let left = count;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (left > 0) {
        left -= 1;
        const t0 = performance.now();
        await call();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return latencies;
}

export interface BenchStack {
  config: Config;
  secretsKeyring: SecretsKeyring;
  databaseUrl: string;
  temporalAddress: string;
  /** Migrated. */
  dataSource: DataSource;
  /** Closes the DataSource, stops PostgreSQL and Temporal, and removes the data directory. */
  stop(): Promise<void>;
}

/**
 * A private embedded stack for one benchmark: PostgreSQL and a Temporal dev server on free ports,
 * in a fresh data directory, with the rate limit and hourly quota off (bench-limits.ts) and `env` on top.
 */
export async function startBenchStack(
  options: { env?: Record<string, string>; poolSize?: number; name?: string } = {},
): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `agent-runs-bench-${options.name ?? 'run'}-`));
  // The embedded PostgreSQL runs as another user when the benchmark runs as root.
  chmodSync(dataDir, 0o755);
  const config = loadConfig({
    ...benchLimits(),
    AGENT_RUNS_DATA_DIR: dataDir,
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_DEV_HTTP_PORT: String(await freePort()),
    TEMPORAL_DEV_METRICS_PORT: String(await freePort()),
    LOG_LEVEL: 'error',
    ...options.env,
  });
  const secretsKeyring = resolveSecretsKeyring(config, { create: true });
  const deps = await startDependencies(config, () => undefined, { temporalUi: false });
  const dataSource = await openDataSource(deps.databaseUrl, { poolSize: options.poolSize ?? 20 });
  await runMigrations(dataSource);
  return {
    config,
    secretsKeyring,
    databaseUrl: deps.databaseUrl,
    temporalAddress: deps.temporalAddress,
    dataSource,
    async stop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await deps.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface BenchApi {
  server: Server;
  /** `http://127.0.0.1:<port>/api/v1`. */
  base: string;
  /** A bench team's key, and JSON. */
  headers: Record<string, string>;
}

/** The service's API over `stack` on a free loopback port, as `npm start` builds it, with a key of a bench team. */
export async function serveBenchApi(
  stack: BenchStack,
  temporal: { client: Client; connection: Connection },
  logger: Logger,
): Promise<BenchApi> {
  const { config, dataSource, secretsKeyring } = stack;
  const app = createApp({
    config,
    dataSource,
    temporalClient: temporal.client,
    temporalConnection: temporal.connection,
    logger,
    secretsKeyring,
  });
  const server = await listen(app, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1`;
  const { rawKey } = await createApiKeyService({ config, dataSource }).create({
    kind: 'personal',
    name: 'bench',
    team: 'bench',
  });
  return { server, base, headers: { Authorization: `Bearer ${rawKey}`, 'content-type': 'application/json' } };
}
