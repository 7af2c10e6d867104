import { ConfigError, loadConfig } from '../core/config';
import { assertSchemaCurrent } from '../infra/schema-check';
import { watchShutdownSignals } from '../core/shutdown-signal';
import { createLogger, loggerOptions } from '../core/logger';
import { connectWorkerConnection, openDataSource } from '../infra/connections';
import { openObjectStore } from '../infra/object-store/create-object-store';
import { resolveEndpoints, temporalTarget } from '../infra/runtime';
import { freeLoopbackAddress, installTemporalRuntime, temporalMetricsSource } from '../infra/temporal-runtime';
import { startTracing } from '../infra/tracing';
import { createWorker } from './create-worker';
import { startWorkerMetricsServer, type WorkerState } from './metrics-server';

/** Production entry point: one worker process (run as many as the load needs). */
async function main(): Promise<void> {
  watchShutdownSignals();
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker', loggerOptions(config));
  let state: WorkerState = 'starting';
  // The worker's own room (slots, disk) once it exists: its metrics server starts before it.
  const own: { metrics?: () => Promise<string> } = {};
  // The SDK's own metrics go to a loopback exporter that the worker's /metrics serves along with its own.
  const temporalMetrics = config.metrics.workerPort ? await freeLoopbackAddress() : undefined;
  installTemporalRuntime({ logger, prometheusBindAddress: temporalMetrics });
  const metricsServer = temporalMetrics
    ? await startWorkerMetricsServer({
        host: config.host,
        port: config.metrics.workerPort,
        bearerToken: config.metrics.bearerToken,
        extraMetrics: [async () => (own.metrics ? own.metrics() : ''), temporalMetricsSource(temporalMetrics)],
        state: () => state,
      })
    : undefined;
  const endpoints = resolveEndpoints(config);
  // Refuses to start when it cannot write, read and delete there: every run's files go there.
  const objectStore = await openObjectStore(config.objectStore);
  const tracing = startTracing(config, 'agent-runs-worker');
  const dataSource = await openDataSource(endpoints.databaseUrl, {
    queryTimeoutMs: config.database.queryTimeoutMs,
    logger,
  });
  const newerMigrations = await assertSchemaCurrent(dataSource, 'This worker');
  if (newerMigrations.length)
    logger.warn('the database schema is newer than this build: a rolling upgrade or a rollback', {
      migrations: newerMigrations,
    });
  const connection = await connectWorkerConnection(temporalTarget(config, endpoints));
  const worker = await createWorker({
    config,
    dataSource,
    connection,
    logger,
    platformEndpoints: [endpoints.databaseUrl, endpoints.temporalAddress],
    tracing,
    objectStore,
  });
  own.metrics = worker.metrics;
  logger.info('worker polling', {
    task_queue: config.temporal.taskQueue,
    namespace: config.temporal.namespace,
    metrics: metricsServer ? `http://${config.host}:${config.metrics.workerPort}/metrics` : 'off',
    run_limits: worker.runLimits,
    harnesses: worker.harnesses.offered,
    objects: objectStore.description,
    temporal: `${endpoints.temporalAddress} (${endpoints.embeddedTemporal ? 'plaintext' : config.temporal.connection.security})`,
  });
  state = 'ok';
  for (const [type, why] of Object.entries(worker.harnesses.missing)) {
    logger.warn('harness not offered: its runs fail on this worker', { harness: type, why });
  }
  // The first SIGTERM (or SIGINT) drains the worker; a second stops it now. run() resolves once it has stopped.
  let signals = 0;
  const stop = () => {
    state = 'draining';
    if (++signals === 1) void worker.drain();
    else worker.shutdown();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  await worker.run();
  await connection.close();
  await dataSource.destroy();
  metricsServer?.close();
  await tracing?.shutdown();
  logger.info('worker stopped');
}

main().catch((err: unknown) => {
  // A configuration to change says everything in its message; anything else needs its stack.
  const text =
    err instanceof Error ? (err instanceof ConfigError ? err.message : (err.stack ?? err.message)) : String(err);
  process.stderr.write(`Worker failed: ${text}\n`);
  process.exit(1);
});
