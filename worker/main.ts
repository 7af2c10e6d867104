import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import { connectWorkerConnection, openDataSource } from '../infra/connections';
import { resolveEndpoints } from '../infra/runtime';
import { startTracing } from '../infra/tracing';
import { createWorker } from './create-worker';

/** Production entry point: one worker process (run as many as the load needs). */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker');
  const endpoints = resolveEndpoints(config);
  const tracing = startTracing(config, 'agent-runs-worker');
  const dataSource = await openDataSource(endpoints.databaseUrl, undefined, config.database.queryTimeoutMs);
  const connection = await connectWorkerConnection(endpoints.temporalAddress);
  const worker = await createWorker({
    config,
    dataSource,
    connection,
    logger,
    platformEndpoints: [endpoints.databaseUrl, endpoints.temporalAddress],
    tracing,
  });
  logger.info('worker polling', { taskQueue: config.temporal.taskQueue, namespace: config.temporal.namespace });
  // The Temporal runtime drains the worker on SIGINT/SIGTERM; run() resolves once it has.
  await worker.run();
  await connection.close();
  await dataSource.destroy();
  await tracing?.shutdown();
  logger.info('worker stopped');
}

main().catch((err: unknown) => {
  process.stderr.write(`Worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
