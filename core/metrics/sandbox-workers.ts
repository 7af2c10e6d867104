import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from './registry';

/** Sandbox and workers: refused connections, webhook deliveries, workspaces on disk, run limits. */

/** Why a connection was refused: the run's network policy, or the platform's address rules. */
export type RefusalKind =
  | 'network_policy'
  | 'private_address'
  | 'platform_endpoint'
  | 'unresolvable'
  | 'bad_port'
  | 'too_many_connections'
  | 'other';

export const sandboxRefusals = new Counter({
  name: 'agent_runs_sandbox_refusals_total',
  help: 'Connections refused, by kind and by who asked: sandbox (a command or stdio MCP server, through the egress proxy) or worker (its own connections to MCP servers and webhooks).',
  labelNames: ['kind', 'source'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveryAttempts = new Counter({
  name: 'agent_runs_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by outcome: delivered (2xx), http_error, redirect, timeout, refused (address rules), network_error, unsendable.',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveriesGivenUp = new Counter({
  name: 'agent_runs_webhook_deliveries_given_up_total',
  help: 'Webhook deliveries whose retry window ran out without a 2xx.',
  registers: [metricsRegistry],
});

export const workspacesOnDisk = new Gauge({
  name: 'agent_runs_worker_workspaces',
  help: "Runs' workspaces on this worker's disk that are still wanted, after its latest sweep.",
  labelNames: ['worker_id'] as const,
  registers: [metricsRegistry],
});

export const workspacesRemoved = new Counter({
  name: 'agent_runs_worker_workspaces_removed_total',
  help: 'Workspaces the sweep removed: run_gone, held_elsewhere (another worker or a newer provisioning), settled (ended past its idle window).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const workspaceBytesReclaimed = new Counter({
  name: 'agent_runs_worker_workspace_bytes_reclaimed_total',
  help: 'Bytes of disk the workspace sweep gave back.',
  registers: [metricsRegistry],
});

export const runLimitsEnforced = new Gauge({
  name: 'agent_runs_worker_run_limits_enforced',
  help: "Whether this worker limits each run's processes together in a cgroup (1), or only one by one (0, AGENT_RUN_LIMITS=off).",
  registers: [metricsRegistry],
});

export const diskLimitsEnforced = new Gauge({
  name: 'agent_runs_worker_disk_limits_enforced',
  help: "Whether this worker gives each run's files a filesystem of AGENT_WORKSPACE_MAX_BYTES (1), or measures them after the fact (0, AGENT_DISK_LIMITS=measure).",
  registers: [metricsRegistry],
});

export const workerDraining = new Gauge({
  name: 'agent_runs_worker_draining',
  help: 'Whether this worker is draining (1: SIGTERM came; it takes no new work and hands its runs over), else 0.',
  registers: [metricsRegistry],
});

export const drainHandovers = new Counter({
  name: 'agent_runs_worker_drain_handovers_total',
  help: "Runs' next steps a draining worker refused, so that they went on at once on another worker from their checkpoints.",
  registers: [metricsRegistry],
});

export function observeRefusal(kind: RefusalKind, source: 'sandbox' | 'worker'): void {
  sandboxRefusals.inc({ kind, source });
}

export type WebhookAttemptOutcome =
  'delivered' | 'http_error' | 'redirect' | 'timeout' | 'refused' | 'network_error' | 'unsendable';

export function observeWebhookAttempt(outcome: WebhookAttemptOutcome): void {
  webhookDeliveryAttempts.inc({ outcome });
}

export function observeWebhookGivenUp(): void {
  webhookDeliveriesGivenUp.inc();
}
