/**
 * Every metric of the service, on one prom-client registry that the API (`GET /metrics`), the
 * worker (`WORKER_METRICS_PORT`) and `npm start` serve. Names start with `agent_runs_`; labels
 * take only values from short fixed sets (route templates, states, error codes, tool names,
 * configured models): never a run id or anything else a caller can multiply, and a team only
 * where the series are bounded (agent_runs_team_storage_bytes: the 20 teams that store most).
 * Never imported by workflow code.
 *
 * The metrics are defined by area in core/metrics/ and re-exported here; importing this module
 * registers all of them, in this order.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { ConfigError } from './config/parsers';
import { metricsRegistry } from './metrics/registry';

export { metricsRegistry } from './metrics/registry';
export { eventStreamsOpen, eventStreamsRefused, httpRequestDuration, observeHttpRequest } from './metrics/http';
export {
  approvalDecisionDuration,
  observeApprovalDecided,
  observeRunCreated,
  observeRunEnded,
  observeRunQueued,
  runQueueDuration,
  runsCreated,
  runsDeleted,
  runsEnded,
  type RunCreatedOrigin,
} from './metrics/runs';
export {
  modelCallDuration,
  modelCost,
  modelTokens,
  observeModelCall,
  observeStep,
  observeToolCall,
  observeToolCallNotRun,
  stepDuration,
  toolCallDuration,
  toolCalls,
} from './metrics/model-tools';
export {
  workerDraining,
  drainHandovers,
  observeRefusal,
  observeWebhookAttempt,
  observeWebhookGivenUp,
  runLimitsEnforced,
  diskLimitsEnforced,
  sandboxRefusals,
  webhookDeliveriesGivenUp,
  webhookDeliveryAttempts,
  workspaceBytesReclaimed,
  workspacesOnDisk,
  workspacesRemoved,
  type RefusalKind,
  type WebhookAttemptOutcome,
} from './metrics/sandbox-workers';
export { databaseReachable, databaseRefusals, rateLimitRejections } from './metrics/database-limits';
export { auditEventsNotStored, auditEventsPruned, auditEventsRecorded } from './metrics/audit';
export { harnessInvocations, harnessTokens, observeHarnessInvocation, observeHarnessTokens } from './metrics/harnesses';
export {
  checkpointBytesAdded,
  checkpointDuration,
  checkpointRestores,
  checkpointsTaken,
  objectsCollected,
  objectStoreBytes,
  objectStoreObjects,
} from './metrics/checkpoints';
export {
  cachedRead,
  serviceStateMetrics,
  KEY_EXPIRY_WARNING_SECONDS,
  SERVICE_STATE_MAX_AGE_MS,
  WAITING_FOR,
  type RunQueueSnapshot,
  type ServiceStateSources,
  type WaitingFor,
} from './metrics/service-state';
export { workerCapacityMetrics, type WorkerCapacitySources } from './metrics/worker-capacity';
export {
  PAUSED_IN_RESTORE_MODE,
  restoreMode,
  restoreModePasses,
  type PausedInRestoreMode,
} from './metrics/restore-mode';
export {
  dataLifecycleMetrics,
  refreshedInBackground,
  TEAM_STORAGE_MAX_AGE_MS,
  TEAM_STORAGE_TEAMS,
  type DataLifecycleSources,
  type TeamStorage,
} from './metrics/data-lifecycle';

/** The Prometheus text of the registry, followed by other sources' (the Temporal SDK's exporter). */
export async function renderMetrics(
  sources: (() => Promise<string>)[] = [],
): Promise<{ contentType: string; body: string }> {
  const parts = await Promise.all([metricsRegistry.metrics(), ...sources.map((source) => source())]);
  return {
    contentType: metricsRegistry.contentType,
    body: parts.map((p) => (p.endsWith('\n') || p === '' ? p : `${p}\n`)).join(''),
  };
}

/** Whether an `Authorization` header carries `Bearer <token>` (compared in constant time). */
export function bearerTokenMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(match[1]!), digest(token));
}

/** Whether HOST binds loopback only (`localhost`, 127.0.0.0/8, `::1`): nothing off this machine reaches it. */
export function isLoopbackHost(host: string): boolean {
  const address = host
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();
  if (address === 'localhost') return true;
  if (isIP(address) === 4) return address.startsWith('127.');
  if (isIP(address) === 6) return address === '::1' || /^::ffff:127\./.test(address);
  return false;
}

/**
 * `/metrics` shows every team's runs, models and costs: off loopback it needs its token. A server
 * (`what`) bound elsewhere without METRICS_BEARER_TOKEN refuses to start, naming the variable,
 * rather than serve them to whoever reaches it (or serve nothing while Prometheus is left to
 * find out). On a laptop (HOST's default, 127.0.0.1) it stays open with nothing to configure.
 */
export function assertMetricsGuarded(what: string, host: string, bearerToken: string | undefined): void {
  if (bearerToken !== undefined || isLoopbackHost(host)) return;
  throw new ConfigError(
    `Invalid configuration:\n  METRICS_BEARER_TOKEN: required when ${what} listens on HOST=${host}, not on loopback only: its /metrics would show every team's runs, models and costs to anyone who reaches it. Set METRICS_BEARER_TOKEN (e.g. \`openssl rand -hex 32\`) and give Prometheus the same token, or bind HOST to 127.0.0.1.`,
  );
}
