import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { watchShutdownSignals } from '../core/shutdown-signal';
import { ConfigError, loadConfig, type Config } from '../core/config';
import { createLogger, loggerOptions } from '../core/logger';
import { assertMetricsGuarded } from '../core/metrics';
import {
  configuredModelProviders,
  isKnownModelProvider,
  MODEL_PROVIDER_KEY_VARIABLES,
  modelProviderOf,
  type ModelProviderName,
} from '../core/model-providers';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';
import { createApp } from '../api/app';
import { startReconciler } from '../api/reconciler';
import { closeServer, listen } from '../api/server';
import { countApiKeys } from '../db/api-key-reads';
import { createAuditLog, serviceActor } from '../services/audit/audit-log';
import { createApiKeyService } from '../services/keys/api-key-service';
import { runMigrations } from '../db/data-source';
import { connectTemporalClient, connectWorkerConnection, openDataSource } from '../infra/connections';
import { DataDirInUseError, lockDataDir } from '../infra/data-dir-lock';
import { leaveSignalsToCaller } from '../infra/embedded-postgres';
import { ObjectStoreUnusableError, openObjectStore } from '../infra/object-store/create-object-store';
import { stopLeftovers } from '../infra/leftovers';
import { assertPortsFree, plannedPorts, PortUnavailableError } from '../infra/port-check';
import { startDependencies, temporalTarget } from '../infra/runtime';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { ensureSearchAttributes } from '../infra/search-attributes';
import { elapsedTicker } from '../infra/temporal-cli';
import { freeLoopbackAddress, installTemporalRuntime, temporalMetricsSource } from '../infra/temporal-runtime';
import { startTracing } from '../infra/tracing';
import { createWorker, WORKFLOW_BUNDLE_PATH } from '../worker/create-worker';
import { cachedWorkflowBundle } from '../worker/workflow-bundle-cache';

const say = (message: string) => process.stdout.write(`${message}\n`);

/** The banner's word on models: the default one, and a warning when runs cannot reach it. */
function modelLines(config: Config): string[] {
  const model = config.models.defaultModel;
  const lines = [`Default model:   ${model} (AGENT_DEFAULT_MODEL)`];
  const configured = configuredModelProviders(config);
  const provider = modelProviderOf(model);
  if (configured.length === 0) {
    lines.push(
      `Warning: no model provider is configured: every run fails until you set ${Object.values(MODEL_PROVIDER_KEY_VARIABLES).join(' or ')} and restart.`,
    );
  } else if (isKnownModelProvider(model) && !(configured as string[]).includes(provider)) {
    const variable = MODEL_PROVIDER_KEY_VARIABLES[provider as ModelProviderName];
    lines.push(`Warning: ${variable} is not set: runs on the default model ${model} fail.`);
  }
  return lines;
}

/** `npm start`: everything on one machine, embedded where nothing external is configured. */
async function main(): Promise<void> {
  watchShutdownSignals();
  const started = Date.now();
  const config = loadConfig();
  // Before anything starts: its API, off loopback, serves /metrics only with its token.
  assertMetricsGuarded('the API', config.host, config.metrics.bearerToken);
  // Readable lines on a terminal, JSON lines when the output goes to a file or a collector.
  const logOptions = loggerOptions(config, process.stderr.isTTY ? 'pretty' : 'json');
  const logger = createLogger(config.logLevel, 'start', logOptions);
  const workerLogger = createLogger(config.logLevel, 'worker', logOptions);
  const apiLogger = createLogger(config.logLevel, 'api', logOptions);
  // First of all: a second instance on the same data directory is told so, and nothing starts.
  const unlockDataDir = await lockDataDir(config.dataDir, (err) =>
    logger.error('lost the lock of the data directory', { error: err.message }),
  );
  // Holding the lock, whatever a previous instance here left running is an orphan on our ports.
  await stopLeftovers(config, say);
  // Before anything starts: every taken port, each naming its variable, not a failure halfway.
  await assertPortsFree(plannedPorts(config));
  // The SDK's own metrics, on a loopback exporter that the API's /metrics serves with the rest.
  const temporalMetrics = await freeLoopbackAddress();
  installTemporalRuntime({ logger: workerLogger, prometheusBindAddress: temporalMetrics });
  // Without a prebuilt bundle (`npm run build`), the cached one while its sources are unchanged;
  // else bundled now, beside PostgreSQL's and Temporal's start (other processes) instead of after.
  const workflowBundle: Promise<string | undefined> =
    config.worker.workflowBundle !== undefined || existsSync(WORKFLOW_BUNDLE_PATH)
      ? Promise.resolve(config.worker.workflowBundle)
      : cachedWorkflowBundle();
  workflowBundle.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  // A laptop needs no setup: without SECRETS_ENCRYPTION_KEY, a key file in the data dir (made once).
  const secretsKeyring = resolveSecretsKeyring(config, { create: true });
  // Runs' files (artifacts, attachments, ...): `<data dir>/objects` unless OBJECT_STORE says otherwise.
  const objectStore = await openObjectStore(config.objectStore);
  const deps = await startDependencies(config, say);
  const tracing = startTracing(config, 'agent-runs');
  const dataSource = await openDataSource(deps.databaseUrl, { queryTimeoutMs: config.database.queryTimeoutMs, logger });
  const applied = await runMigrations(dataSource);
  if (applied.length) say(`Applied migrations: ${applied.join(', ')}`);
  const { connection, client } = await connectTemporalClient(temporalTarget(config, deps), tracing);
  await ensureSearchAttributes(connection, config.temporal.namespace, logger);

  const workerConnection = await connectWorkerConnection(temporalTarget(config, deps));
  // The first start on a machine builds the sandbox's sandbox-init with Go (cached after): the
  // longest step then (~30 s with an empty Go build cache), so it says so every 5 s. The worker's
  // own lookup below then finds it, or reports why it cannot be had.
  const stopTicker = elapsedTicker('preparing the sandbox (the first start builds sandbox-init with Go)', say);
  await locateSandboxInit(config.sandbox.initPath)
    .catch(() => undefined)
    .finally(stopTicker);
  const worker = await createWorker({
    config,
    workflowBundlePath: await workflowBundle,
    dataSource,
    connection: workerConnection,
    logger: workerLogger,
    platformEndpoints: [deps.databaseUrl, deps.temporalAddress],
    secretsKeyring,
    tracing,
    objectStore,
  });
  const workerDone = worker.run();

  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger: apiLogger,
    isWorkerRunning: () => worker.getState() === 'RUNNING',
    workerRunLimits: () => worker.runLimits,
    workerHarnesses: () => worker.harnesses.offered,
    secretsKeyring,
    extraMetrics: [worker.metrics, temporalMetricsSource(temporalMetrics)],
    objectStore,
  });
  const server = await listen(app, config.port, config.host);
  const reconciler = startReconciler({
    dataSource,
    temporal: client,
    logger: apiLogger,
    intervalSeconds: config.reconcileIntervalSeconds,
    restoreMode: config.restoreMode,
  });

  const count = await countApiKeys(dataSource);
  say('');
  say(`Agent runs API:  ${config.publicUrl}/api/v1`);
  if (deps.temporalUiUrl) say(`Temporal UI:     ${deps.temporalUiUrl}`);
  if (config.tracing) say(`Traces to:       ${config.tracing.tracesUrl}`);
  say(`Data directory:  ${config.dataDir}`);
  say(`Objects:         ${objectStore.description}`);
  if (deps.embeddedDatabase) {
    // What another API or worker on this machine needs to join this stack (its password stays in its file).
    const url = new URL(deps.databaseUrl);
    say(
      `Database:        DATABASE_URL=postgres://${url.username}:$(cat ${path.join(config.dataDir, 'postgres', 'password')})@${url.host}${url.pathname}`,
    );
  }
  say(
    deps.embeddedTemporal
      ? `Temporal:        TEMPORAL_ADDRESS=${deps.temporalAddress}`
      : `Temporal:        ${deps.temporalAddress}, namespace ${config.temporal.namespace}, ${config.temporal.connection.security}`,
  );
  say(`Run limits:      ${worker.runLimits}`);
  say(
    `Harnesses:       ${Object.entries(worker.harnesses.offered)
      .map(([type, version]) => `${type} (${version})`)
      .join(', ')}`,
  );
  for (const [type, why] of Object.entries(worker.harnesses.missing)) say(`                 not ${type}: ${why}`);
  for (const line of modelLines(config)) say(line);
  if (count === 0) {
    const audit = { log: createAuditLog({ dataSource, logger: apiLogger }), actor: serviceActor('first-start') };
    const key = await createApiKeyService({ config, dataSource, audit }).create({
      kind: 'personal',
      name: os.userInfo().username || 'admin',
      team: 'default',
      role: 'admin',
    });
    say('');
    say(
      'First start: created a personal admin API key for team "default" (shown once; more with `npm run keys -- create`):',
    );
    say(key.rawKey);
    say('');
  }
  // Last, once everything above is true: scripts wait for this line.
  say(`Ready in ${((Date.now() - started) / 1000).toFixed(1)}s.`);

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
    await unlockDataDir();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  // From here this process stops the embedded PostgreSQL itself, after the API and the worker.
  leaveSignalsToCaller();
  workerDone.then(
    () => void shutdown(),
    (err: unknown) => {
      logger.error('worker failed', { error: err });
      void shutdown();
    },
  );
}

main().catch((err: unknown) => {
  // What the operator must change says everything in its message; anything else needs its stack.
  const known =
    err instanceof PortUnavailableError ||
    err instanceof ConfigError ||
    err instanceof DataDirInUseError ||
    err instanceof ObjectStoreUnusableError;
  const text = err instanceof Error ? (known ? err.message : (err.stack ?? err.message)) : String(err);
  process.stderr.write(`Start failed: ${text}\n`);
  process.exit(1);
});
