import { loadConfig } from '../core/config';
import { createLogger, loggerOptions } from '../core/logger';
import { connectWorkerConnection, openDataSource } from '../infra/connections';
import { resolveEndpoints } from '../infra/runtime';
import { installTemporalRuntime } from '../infra/temporal-runtime';
import { createWorker } from './create-worker';

/** Production entry point: one worker process (run as many as the load needs). */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker', loggerOptions(config));
  installTemporalRuntime({ logger });
  const endpoints = resolveEndpoints(config);
  const dataSource = await openDataSource(endpoints.databaseUrl, undefined, config.database.queryTimeoutMs);
  const connection = await connectWorkerConnection(endpoints.temporalAddress);
  const worker = await createWorker({
    config,
    dataSource,
    connection,
    logger,
    platformEndpoints: [endpoints.databaseUrl, endpoints.temporalAddress],
  });
  logger.info('worker polling', { task_queue: config.temporal.taskQueue, namespace: config.temporal.namespace });
  // The Temporal runtime drains the worker on SIGINT/SIGTERM; run() resolves once it has.
  await worker.run();
  await connection.close();
  await dataSource.destroy();
  logger.info('worker stopped');
}

main().catch((err: unknown) => {
  process.stderr.write(`Worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
