import os from 'node:os';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import { createApp } from '../api/app';
import { startReconciler } from '../api/reconciler';
import { closeServer, listen } from '../api/server';
import { createApiKey } from '../db/api-keys';
import { runMigrations } from '../db/data-source';
import { connectTemporalClient, connectWorkerConnection, openDataSource } from '../infra/connections';
import { startDependencies } from '../infra/runtime';
import { resolveSecretsKey } from '../infra/secrets-key';
import { ensureSearchAttributes } from '../infra/search-attributes';
import { freeLoopbackAddress, installTemporalRuntime, temporalMetricsSource } from '../infra/temporal-runtime';
import { startTracing } from '../infra/tracing';
import { createWorker } from '../worker/create-worker';

const say = (message: string) => process.stdout.write(`${message}\n`);

/** `npm start`: everything on one machine, embedded where nothing external is configured. */
async function main(): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'start');
  // The SDK's own metrics, on a loopback exporter that the API's /metrics serves with the rest.
  const temporalMetrics = await freeLoopbackAddress();
  installTemporalRuntime({ logger: createLogger(config.logLevel, 'worker'), prometheusBindAddress: temporalMetrics });
  // A laptop needs no setup: without SECRETS_ENCRYPTION_KEY, a key file in the data dir (made once).
  const secretsKey = resolveSecretsKey(config, { create: true });
  const deps = await startDependencies(config, say);
  const tracing = startTracing(config, 'agent-runs');
  const dataSource = await openDataSource(deps.databaseUrl, undefined, config.database.queryTimeoutMs);
  const applied = await runMigrations(dataSource);
  if (applied.length) say(`Applied migrations: ${applied.join(', ')}`);
  const { connection, client } = await connectTemporalClient(deps.temporalAddress, config.temporal.namespace, tracing);
  await ensureSearchAttributes(connection, config.temporal.namespace, logger);

  const workerConnection = await connectWorkerConnection(deps.temporalAddress);
  const worker = await createWorker({
    config,
    dataSource,
    connection: workerConnection,
    logger: createLogger(config.logLevel, 'worker'),
    platformEndpoints: [deps.databaseUrl, deps.temporalAddress],
    secretsKey,
    tracing,
  });
  const workerDone = worker.run();

  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger: createLogger(config.logLevel, 'api'),
    isWorkerRunning: () => worker.getState() === 'RUNNING',
    secretsKey,
    extraMetrics: [temporalMetricsSource(temporalMetrics)],
  });
  const server = await listen(app, config.port, config.host);
  const reconciler = startReconciler({
    dataSource,
    temporal: client,
    logger: createLogger(config.logLevel, 'api'),
    intervalSeconds: config.reconcileIntervalSeconds,
  });

  const [{ count }] = (await dataSource.query(`SELECT count(*)::int AS count FROM api_keys`)) as [{ count: number }];
  say('');
  say(`Agent runs API:  ${config.publicUrl}/api/v1`);
  if (deps.temporalUiUrl) say(`Temporal UI:     ${deps.temporalUiUrl}`);
  if (config.tracing) say(`Traces to:       ${config.tracing.tracesUrl}`);
  say(`Data directory:  ${config.dataDir}`);
  say(`Ready in ${((Date.now() - started) / 1000).toFixed(1)}s.`);
  if (count === 0) {
    const key = await createApiKey(dataSource, {
      kind: 'personal',
      name: os.userInfo().username || 'admin',
      team: 'default',
    });
    say('');
    say('First start: created a personal API key for team "default" (shown once; more with `npm run keys -- create`):');
    say(key.rawKey);
  }

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    say('Shutting down...');
    await closeServer(server);
    await reconciler.stop();
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await workerDone.catch(() => undefined);
    await workerConnection.close();
    await connection.close();
    await dataSource.destroy();
    await tracing?.shutdown();
    await deps.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  workerDone.then(
    () => void shutdown(),
    (err: unknown) => {
      logger.error('worker failed', { error: err });
      void shutdown();
    },
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`Start failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
