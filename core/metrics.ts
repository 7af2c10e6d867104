/**
 * Every metric of the service, on one prom-client registry that the API (`GET /metrics`), the
 * worker (`WORKER_METRICS_PORT`) and `npm start` serve. Names start with `agent_runs_`; labels
 * take only values from short fixed sets (route templates, states, error codes, tool names,
 * configured models): never a team, a run id or anything else a caller can multiply.
 * Never imported by workflow code.
 *
 * The metrics are defined by area in core/metrics/ and re-exported here; importing this module
 * registers all of them, in this order.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { metricsRegistry } from './metrics/registry';

export { metricsRegistry } from './metrics/registry';
export { eventStreamsOpen, eventStreamsRefused, httpRequestDuration, observeHttpRequest } from './metrics/http';
export {
  observeRunCreated,
  observeRunEnded,
  observeRunQueued,
  runQueueDuration,
  runsCreated,
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
export { harnessInvocations, harnessTokens, observeHarnessInvocation, observeHarnessTokens } from './metrics/harnesses';
export { checkpointBytesAdded, checkpointDuration, checkpointRestores, checkpointsTaken } from './metrics/checkpoints';

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
