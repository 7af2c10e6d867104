import Koa from 'koa';
import Router from '@koa/router';
import type { Client, Connection } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { SecretsKeyring } from '../core/secrets-keyring';
import { urlSigningKeys } from '../core/signed-urls';
import type { Logger } from '../core/logger';
import { createObjectStore } from '../infra/object-store/create-object-store';
import { objectBlobStore } from '../infra/object-store/object-blob-store';
import type { ObjectStore } from '../infra/object-store/object-store';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { authenticate, requireOwnTeam } from './middleware/auth';
import { errorHandler } from './middleware/error-handler';
import { auditRequests } from './middleware/audit-requests';
import { createAuditLog } from '../services/audit/audit-log';
import { httpMetrics } from './middleware/http-metrics';
import { createClientAddressLimit, limitOpenRoutes } from './middleware/client-address-limit';
import { jsonBody } from './middleware/json-body';
import { createFactoryFilesRouter, FACTORY_FILES_PREFIX } from './routes/factory-files-routes';
import { createForgeWebhooksRouter, FORGE_WEBHOOKS_PREFIX } from './routes/forge-webhooks-routes';
import { createForgeWebhookService } from '../services/pull-requests/forge-webhook-service';
import { requestId } from './middleware/request-id';
import { requestLog } from './middleware/request-log';
import { preferSpecificRoutes } from './middleware/specific-routes';
import { rateLimitRequests } from './middleware/rate-limit';
import { requestRateLimit } from '../services/rate-limits';
import { traceRequests } from './middleware/trace-requests';
import { announceRestoreMode } from '../services/restore/restore-mode';
import { createRunService } from '../services/runs/run-service';
import { sessionLinkSigner } from '../services/views/run-item';
import { createAgentIdentitiesRouter } from './routes/agent-identities-routes';
import { createScheduleService } from '../services/schedules/schedule-service';
import { createAgentRouter } from './routes/agent-routes';
import { createArtifactsRouter } from './routes/artifacts-routes';
import { createCheckpointsRouter } from './routes/checkpoints-routes';
import { createPlatformRouter } from './routes/platform-routes';
import { createTranscriptRouter } from './routes/transcript-routes';
import { createTimelineRouter } from './routes/timeline-routes';
import { createFactoryResourceRouter } from './routes/factory-resource-routes';
import { createFactoryTaskRouter } from './routes/factory-task-routes';
import { createFactoryTasks } from '../services/factories/factory-tasks';
import { createDownloadRouter } from './routes/download-routes';
import { createEnvironmentsRouter } from './routes/environments-routes';
import { createFactoriesRouter } from './routes/factories-routes';
import { createErrorReferenceRouter } from './routes/error-reference-routes';
import { createHealthRouter } from './routes/health-routes';
import { checkTemporal } from './dependency-checks';
import { dataLifecycleMetrics, serviceStateMetrics } from '../core/metrics';
import { readRunQueue } from '../db/run-queue-reads';
import { oldestEndedRunSeconds } from '../db/run-retention-reads';
import { largestTeamsStoredBytes } from '../db/team-storage-reads';
import { countKeysExpiringWithin } from '../db/api-key-reads';
import { createLandingRouter } from './routes/landing-routes';
import { createConsoleRouter } from './routes/console-routes';
import { createMetricsRouter } from './routes/metrics-routes';
import { createOpenApiRouter } from './routes/openapi-routes';
import { openApiLimits } from './openapi/document';
import { createRedirectRouter } from './routes/redirect-routes';
import { createRunsRouter } from './routes/runs-routes';
import { createSchedulesRouter } from './routes/schedules-routes';
import { createSessionRouter } from './routes/session-routes';
import { createRunEventsRouter } from './routes/run-events-routes';
import { createRunEventNotifier } from './run-event-notifier';
import { createRunEventStreams } from './run-event-stream';
import { onServerClose, onServerClosed } from './server';
import { createWebhooksRouter } from './routes/webhooks-routes';
import { createSecretsRouter } from './routes/secrets-routes';
import { createAuditRouter } from './routes/audit-routes';
import { createEnvironmentService } from '../services/environments/environment-service';
import { createAgentIdentityService } from '../services/identities/agent-identity-service';
import { createFactoryService } from '../services/factories/factory-service';
import { createWebhookService } from '../services/webhooks/webhook-service';
import { createManagedSecretService } from '../services/secrets/managed-secret-service';
import { createKeyUseRecorder } from '../services/keys/key-use-recorder';
import { recordKeyUses } from '../services/keys/api-key-service';

export interface AppDeps {
  config: Config;
  dataSource: DataSource;
  temporalClient: Client;
  temporalConnection: Connection;
  logger: Logger;
  isWorkerRunning?: () => boolean;
  /** How the worker of this process limits its runs (shown by /readyz). */
  workerRunLimits?: () => string;
  /** The harnesses the worker of this process offers (shown by /readyz). */
  workerHarnesses?: () => Record<string, string>;
  /** More Prometheus text for `GET /metrics`: the worker's and the Temporal SDK's, where this process runs a worker. */
  extraMetrics?: (() => Promise<string>)[];
  /** Keys of the stored credentials and signed URLs; default: resolveSecretsKeyring(config). */
  secretsKeyring?: SecretsKeyring;
  /** Where runs' files' bytes are; default: createObjectStore(config) (entry points pass it checked: openObjectStore). */
  objectStore?: ObjectStore;
}

/** Builds the Koa app; tests and every entry point build it the same way. */
export function createApp(deps: AppDeps): Koa {
  const { config, dataSource, logger } = deps;
  announceRestoreMode(config.restoreMode, logger);
  const secretsKeyring = deps.secretsKeyring ?? resolveSecretsKeyring(config);
  const app = new Koa();
  // The client's address (rate limits, logs) from X-Forwarded-For only through trusted proxies:
  // a client that sends the header itself must not choose its own address.
  app.proxy = config.trustProxyHops > 0;
  app.maxIpsCount = config.trustProxyHops;
  app.silent = true;
  const anonymousLimit = createClientAddressLimit(config.quotas.unauthenticatedPerMinute);

  const objectStore = deps.objectStore ?? createObjectStore(config.objectStore);
  const blobs = objectBlobStore(objectStore);
  const signingKeys = urlSigningKeys(secretsKeyring);
  const downloads = { keys: signingKeys, publicUrl: config.publicUrl, ttlSeconds: config.downloadUrlTtlSeconds };
  const sessionLinks = sessionLinkSigner(config, signingKeys);
  const runService = createRunService({
    config,
    dataSource,
    temporal: deps.temporalClient,
    secretsKeyring,
    blobs,
    objectStore,
    logger,
  });
  const scheduleService = createScheduleService({
    config,
    dataSource,
    temporal: deps.temporalClient,
    secretsKeyring,
    runService,
  });
  // One LISTEN connection per app, opened by the first stream; closed with the app's server.
  const streams = createRunEventStreams({
    dataSource,
    notifier: createRunEventNotifier({ databaseUrl: databaseUrlOf(dataSource), logger }),
    heartbeatSeconds: config.sseHeartbeatSeconds,
    logger,
    caps: config.sseCaps,
  });
  onServerClose(app, () => streams.close());
  // Keys' last uses, written in batches; the last batch once no request can note another.
  const keyUses = createKeyUseRecorder({ write: recordKeyUses(dataSource), logger });
  onServerClosed(app, () => keyUses.stop());
  const auditLog = createAuditLog({ dataSource, logger });
  const api = new Router({ prefix: '/api/v1' });
  // Every change is recorded, refused ones too: outside everything that may refuse it.
  api.use(auditRequests(auditLog));
  // Who asks comes first: a body is read only for an authenticated, admitted request, with the
  // limit of the route it is for.
  api.use(authenticate(dataSource, anonymousLimit, keyUses));
  api.use(rateLimitRequests(requestRateLimit(config, dataSource, logger)));
  api.use(requireOwnTeam());
  api.use(
    jsonBody({
      attachmentPaths: ['/api/v1/agent/runs', '/api/v1/agent/run', '/api/v1/agent/factories/:uid/runs'],
    }),
  );
  const runs = createRunsRouter({ dataSource, runService, secretsKeyring, downloads, sessionLinks });
  for (const router of [
    createEnvironmentsRouter({ dataSource, environments: createEnvironmentService({ config, dataSource }) }),
    createAgentRouter({ dataSource, secretsKeyring, sessionLinks }),
    createAgentIdentitiesRouter({
      dataSource,
      identities: createAgentIdentityService({ config, dataSource, secretsKeyring }),
    }),
    createFactoriesRouter({ config, dataSource, factories: createFactoryService({ dataSource }) }),
    createSchedulesRouter({ scheduleService }),
    createArtifactsRouter({ dataSource, downloads }),
    createCheckpointsRouter({ dataSource, runService, downloads }),
    createPlatformRouter({ config }),
    createTranscriptRouter({ dataSource, downloads }),
    createTimelineRouter({ dataSource }),
    createFactoryResourceRouter({ dataSource, runService }),
    createFactoryTaskRouter({
      dataSource,
      tasks: createFactoryTasks({
        dataSource,
        cancelRun: (principal, runId) => runService.cancelRun(principal, runId),
      }),
    }),
    createRunEventsRouter({ dataSource, secretsKeyring, streams }),
    createWebhooksRouter({ dataSource, webhooks: createWebhookService({ config, dataSource, secretsKeyring }) }),
    createSecretsRouter({ dataSource, secrets: createManagedSecretService({ config, dataSource, secretsKeyring }) }),
    createAuditRouter({ dataSource }),
  ]) {
    api.use(router.routes(), router.allowedMethods());
  }
  api.use(runs.routes(), runs.allowedMethods());

  const open = [
    createHealthRouter({
      dataSource,
      temporalConnection: deps.temporalConnection,
      namespace: config.temporal.namespace,
      isWorkerRunning: deps.isWorkerRunning,
      workerRunLimits: deps.workerRunLimits,
      workerHarnesses: deps.workerHarnesses,
      restoreMode: config.restoreMode,
    }),
    createSessionRouter({ dataSource, secretsKeyring, streams, sessionLinks }),
    createRedirectRouter({ dataSource }),
    createDownloadRouter({ dataSource, blobs, objectStore, signingKeys, secretsKeyring }),
    createErrorReferenceRouter(),
    createLandingRouter({ temporalUiUrl: config.temporal.uiUrl }),
    createConsoleRouter(),
    createOpenApiRouter(openApiLimits(config)),
    createFactoryFilesRouter({ config }),
    createForgeWebhooksRouter({
      forgeWebhooks: createForgeWebhookService({ dataSource, secrets: config.forgeStatus.webhookSecrets }),
    }),
    createMetricsRouter({
      host: config.host,
      bearerToken: config.metrics.bearerToken,
      // The service's state (queue, stuck runs, Temporal) from the API only: workers would repeat it.
      extraMetrics: [
        serviceStateMetrics({
          runQueue: () => readRunQueue(dataSource.manager),
          keysExpiringWithin: (seconds) => countKeysExpiringWithin(dataSource.manager, seconds),
          temporalReachable: async () =>
            (await checkTemporal(deps.temporalConnection, config.temporal.namespace)) === 'ok',
        }),
        dataLifecycleMetrics({
          teamStorage: (limit) => largestTeamsStoredBytes(dataSource.manager, limit),
          oldestEndedRunSeconds: () => oldestEndedRunSeconds(dataSource.manager),
        }),
        ...(deps.extraMetrics ?? []),
      ],
    }),
  ];

  if (config.tracing) app.use(traceRequests());
  app.use(httpMetrics());
  app.use(requestId());
  app.use(requestLog(logger));
  app.use(errorHandler({ errorReferenceBaseUrl: config.errorReferenceBaseUrl, logger }));
  app.use(limitOpenRoutes(anonymousLimit, '/api/v1', [FACTORY_FILES_PREFIX, FORGE_WEBHOOKS_PREFIX]));
  // Not in throw mode: then the routers set `Allow` on a 405 (RFC 9110 requires it); errorHandler writes the body.
  for (const router of open) app.use(router.routes()).use(router.allowedMethods());
  app.use(api.routes()).use(api.allowedMethods()).use(preferSpecificRoutes());
  return app;
}

function databaseUrlOf(dataSource: DataSource): string {
  const url = (dataSource.options as { url?: string }).url;
  if (!url) throw new Error('The DataSource has no url: event streams need it for their LISTEN connection.');
  return url;
}
