import { assertSchemaCurrent } from '../infra/schema-check';
import { loadConfig } from '../core/config';
import { assertMetricsGuarded } from '../core/metrics';
import { watchShutdownSignals } from '../core/shutdown-signal';
import { createLogger, loggerOptions } from '../core/logger';
import { connectTemporalClient, openDataSource } from '../infra/connections';
import { openObjectStore } from '../infra/object-store/create-object-store';
import { resolveEndpoints, temporalTarget } from '../infra/runtime';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { ensureSearchAttributes } from '../infra/search-attributes';
import { startTracing } from '../infra/tracing';
import { installTemporalRuntime } from '../infra/temporal-runtime';
import { createApp } from './app';
import { startReconciler } from './reconciler';
import { closeServer, listen } from './server';

/** Production entry point: the API alone (scale it behind a load balancer). */
async function main(): Promise<void> {
  watchShutdownSignals();
  const config = loadConfig();
  // Before any connection: an API off loopback serves /metrics only with its token.
  assertMetricsGuarded('the API', config.host, config.metrics.bearerToken);
  const logger = createLogger(config.logLevel, 'api', loggerOptions(config));
  installTemporalRuntime({ logger });
  // Before any connection: without the key, runs with MCP credentials could not be stored.
  const secretsKeyring = resolveSecretsKeyring(config);
  const endpoints = resolveEndpoints(config);
  // Refuses to start when it cannot write, read and delete there: downloads would fail later.
  const objectStore = await openObjectStore(config.objectStore);
  const tracing = startTracing(config, 'agent-runs-api');
  const dataSource = await openDataSource(endpoints.databaseUrl, {
    queryTimeoutMs: config.database.queryTimeoutMs,
    logger,
  });
  const newerMigrations = await assertSchemaCurrent(dataSource, 'The API');
  if (newerMigrations.length)
    logger.warn('the database schema is newer than this build: a rolling upgrade or a rollback', {
      migrations: newerMigrations,
    });
  const { connection, client } = await connectTemporalClient(temporalTarget(config, endpoints), tracing);
  await ensureSearchAttributes(connection, config.temporal.namespace, logger);
  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger,
    secretsKeyring,
    objectStore,
  });
  const server = await listen(app, config.port, config.host);
  const reconciler = startReconciler({
    dataSource,
    temporal: client,
    logger,
    intervalSeconds: config.reconcileIntervalSeconds,
    restoreMode: config.restoreMode,
  });
  logger.info('API listening', {
    url: `http://${config.host}:${config.port}/api/v1`,
    objects: objectStore.description,
    temporal: `${endpoints.temporalAddress} (${endpoints.embeddedTemporal ? 'plaintext' : config.temporal.connection.security})`,
  });

  const shutdown = async () => {
    logger.info('shutting down');
    await closeServer(server);
    await reconciler.stop();
    await connection.close();
    await dataSource.destroy();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());
}

main().catch((err: unknown) => {
  process.stderr.write(`API failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
