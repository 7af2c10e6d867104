import { Context } from '@temporalio/activity';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { Worker, type NativeConnection, type State, type WorkerOptions } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createActivities } from '../activities';
import { WorkerDrain } from './worker-drain';
import { runWorkerHost } from '../db/run-reads';
import { createWebhookActivities } from '../activities/webhook-activities';
import { ImageStore } from '../activities/images/image-store';
import { createSandbox, createToolSandbox } from '../activities/sandbox/create-sandbox';
import { startWorkspaceSweeper, type SweepResult } from '../activities/workspace/workspace-sweeper';
import type { Sandbox } from '../activities/sandbox/sandbox';
import { McpSessionCache } from '../activities/tools/mcp-sessions';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';
import { harnessOffer, type HarnessOffer } from '../activities/harness/cli-harnesses';
import { diskLimitsEnforced, observeStep, runLimitsEnforced, workerCapacityMetrics } from '../core/metrics';
import { waitOutDatabaseOutages } from './database-outage-interceptor';
import { OutboundAddressRules } from '../core/outbound-addresses';
import { platformEndpoints } from '../core/platform-endpoints';
import { decryptMcpServers } from '../core/secrets';
import type { SecretsKeyring } from '../core/secrets-keyring';
import { appendNoticeToCurrentTurn } from '../db/run-events';
import { releaseWorkerLease, renewWorkerLease } from '../db/worker-leases';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { markCancelledActivityLogs } from '../infra/temporal-runtime';
import { workflowTracingSinks, type Tracing } from '../infra/tracing';
import { provisioningQueue, workspaceQueueFor } from '../workflows/run-contract';
import { webhookQueue } from '../workflows/webhook-contract';
import { startWebhookDispatcher } from './webhook-dispatcher';
import { ensureServiceSchedules } from './service-schedules';
import { WorkspaceCapacity } from './workspace-capacity';
import { workflowSources } from './workflow-sources';
import { createRunCheckpoints } from '../activities/checkpoints/create-run-checkpoints';
import { announceRestoreMode } from '../services/restore/restore-mode';
import { openObjectStore } from '../infra/object-store/create-object-store';
import { objectBlobStore } from '../infra/object-store/object-blob-store';
import type { ObjectStore } from '../infra/object-store/object-store';

/** Where `npm run build` writes the prebuilt workflow bundle that production workers load. */
export const WORKFLOW_BUNDLE_PATH = path.resolve(__dirname, '..', 'workflow-bundle.js');

export interface CreateWorkerOptions {
  config: Config;
  dataSource: DataSource;
  connection: NativeConnection;
  logger: Logger;
  /** Overrides the bundle lookup (tests bundle once per test run). */
  workflowBundlePath?: string;
  /**
   * The platform's own services (database URL, Temporal `host:port`): nothing a run starts may
   * connect to them, whatever the network settings allow.
   */
  platformEndpoints: string[];
  /** Key of request-supplied credentials; resolved from the configuration when absent. */
  secretsKeyring?: SecretsKeyring;
  /** The process's tracing (infra/tracing.ts), when on. */
  tracing?: Tracing;
  /** Where runs' files' bytes are; default: openObjectStore(config), checked before the worker starts. */
  objectStore?: ObjectStore;
}

/** The run worker of one process: the shared queue (workflows, provisioning) and its workspace queue. */
export interface RunWorker {
  /** The task queue only workers sharing this host's workspace directory poll. */
  workspaceQueue: string;
  /** How this worker limits each run's processes and files together, or that it does not (AGENT_RUN_LIMITS=off, AGENT_DISK_LIMITS=measure). */
  runLimits: string;
  /** The harnesses this worker can run (with their CLI versions) and those it cannot (with why). */
  harnesses: HarnessOffer;
  /** Prometheus text of its run slots and workspace disk, for the process's `/metrics`. */
  metrics(): Promise<string>;
  /** Sweeps the workspaces on this worker's disk now (it does at start and every WORKSPACE_SWEEP_INTERVAL_SECONDS). */
  sweepWorkspaces(): Promise<SweepResult>;
  run(): Promise<void>;
  /** Stops at once: what runs is cancelled after the SDK's grace time. */
  shutdown(): void;
  /** Stops after WORKER_DRAIN_SECONDS at most, handing its runs over (SIGTERM). */
  drain(): Promise<void>;
  isDraining(): boolean;
  getState(): State;
}

/**
 * A workspace queue per WORKER_ID (default: host name and workspace directory): a worker
 * restarted with the same id and volume picks up the workspaces it left, and no other worker
 * ever gets their tasks.
 */
export function workspaceQueueName(config: Config): string {
  return workspaceQueueFor(config.temporal.taskQueue, config.worker.id);
}

/** Builds the workers: the workflow (prebuilt bundle when present) and the activities. */
export async function createWorker(options: CreateWorkerOptions): Promise<RunWorker> {
  const { config, dataSource, connection, logger } = options;
  announceRestoreMode(config.restoreMode, logger);
  // First: a worker that cannot keep runs' files refuses to start, before it makes anything.
  const objectStore = options.objectStore ?? (await openObjectStore(config.objectStore));
  const bundlePath =
    options.workflowBundlePath ??
    config.worker.workflowBundle ??
    (existsSync(WORKFLOW_BUNDLE_PATH) ? WORKFLOW_BUNDLE_PATH : undefined);
  const workflowSource: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath: workflowSources().workflowsPath };
  const workspaceQueue = workspaceQueueName(config);
  const secretsKeyring = options.secretsKeyring ?? resolveSecretsKeyring(config);
  const platform = platformEndpoints(config, options.platformEndpoints);
  const sandboxRules = new OutboundAddressRules(config.network.sandboxAllowedPrivateHosts);
  await sandboxRules.addPlatformEndpoints(platform);
  const outboundRules = new OutboundAddressRules(config.network.outboundAllowedPrivateHosts);
  await outboundRules.addPlatformEndpoints(platform);
  const images = new ImageStore(
    config.images,
    config.workspace.imageAllowedRegistries,
    outboundRules,
    await createToolSandbox(config),
  );
  const sandbox: Sandbox = await createSandbox(config, sandboxRules, logger, undefined, images);
  const mcpSessions = new McpSessionCache(
    {
      sandbox,
      outboundRules,
      onRefusal: (runId, server, refusal) => {
        void appendNoticeToCurrentTurn(dataSource.manager, runId, `mcp-network-${randomUUID()}`, {
          message: `[sandbox network] MCP server "${server}": refused ${refusal.host}:${refusal.port}: ${refusal.reason}`,
          level: 'warning',
        }).catch((err: unknown) => logger.warn('could not record a refused connection', { run_id: runId, error: err }));
      },
    },
    (servers) => decryptMcpServers(servers, secretsKeyring),
  );
  const capacity = new WorkspaceCapacity(config.worker.maxConcurrentRuns);
  const { tracing } = options;
  const temporal = new Client({
    connection,
    namespace: config.temporal.namespace,
    interceptors: { workflow: tracing?.clientInterceptors() ?? [] },
  });
  const checkpoints = await createRunCheckpoints({ config, dataSource, sandbox, store: objectStore, logger });
  const activities = createActivities({
    dataSource,
    config,
    logger,
    workspaceQueue,
    mcpSessions,
    sandbox,
    temporal,
    secretsKeyring,
    blobs: objectBlobStore(objectStore),
    objectStore,
    images,
    checkpoints,
  });
  // A run counts against the worker's capacity from its provisioning to the end of its turn.
  const { provisionEnvironment, resolveSkillsAndMcpServers, runAgentStep, removeWorkspace } = activities;
  // A failed provisioning stops counting here at once: a retry counts again wherever it lands.
  activities.provisionEnvironment = async (input) => {
    // A run pinned here (`config.worker_host`) comes through this worker's own queue, which is
    // not gated by capacity: it waits for room here instead.
    const ctx = Context.current();
    if (ctx.info.taskQueue === workspaceQueue) await capacity.waitForRoom(ctx);
    return capacity
      .track(input.runId, () => provisionEnvironment(input))
      .catch((err: unknown) => {
        capacity.release(input.runId);
        throw err;
      });
  };
  // A draining worker refuses a run's next work on its workspace (the run goes on elsewhere from
  // its checkpoint), unless the run is pinned here; what already runs is tracked until it ends.
  const drain = new WorkerDrain();
  const refuseWhileDraining = async (runId: string) => {
    if (drain.draining && !(await runWorkerHost(dataSource.manager, runId))) throw drain.refusal(config.worker.id);
  };
  activities.resolveSkillsAndMcpServers = async (input) => {
    await refuseWhileDraining(input.runId);
    return drain.track(() => capacity.track(input.runId, () => resolveSkillsAndMcpServers(input)));
  };
  activities.runAgentStep = async (input) => {
    await refuseWhileDraining(input.runId);
    return drain.track(() =>
      capacity.track(
        input.runId,
        () => observeStep(() => runAgentStep(input)),
        (result) => result.done,
      ),
    );
  };
  activities.removeWorkspace = async (input) => {
    const removed = await removeWorkspace(input);
    if (removed) capacity.release(input.runId);
    return removed;
  };
  const common = {
    connection,
    namespace: config.temporal.namespace,
    activities,
    interceptors: {
      activity: [
        ...(tracing?.activityInterceptors() ?? []),
        waitOutDatabaseOutages(dataSource, logger),
        markCancelledActivityLogs,
      ],
      // Used only when there is no prebuilt bundle: a bundle has them built in.
      ...(bundlePath ? {} : { workflowModules: workflowSources().workflowInterceptorModules }),
    },
    sinks: workflowTracingSinks(tracing),
    // Heartbeats carry cancellation to a running activity; send them often so a cancel lands in seconds.
    maxHeartbeatThrottleInterval: '1s',
    defaultHeartbeatThrottleInterval: '1s',
    shutdownGraceTime: '10s',
    // A worker that died holding a run's cached workflow hands it to another worker after this.
    stickyQueueScheduleToStartTimeout: '3s',
  } satisfies Partial<WorkerOptions>;
  const shared = await Worker.create({ ...common, taskQueue: config.temporal.taskQueue, ...workflowSource });
  // A run has at most one task on its worker's queue at a time: with slots for every run the
  // worker works on and room for follow-ups to idle ones and clean-ups, a step seldom waits, and
  // when it does the worker still renews its lease, so waiting is never mistaken for death.
  const workspace = await Worker.create({
    ...common,
    taskQueue: workspaceQueue,
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentRuns * 2 + 20,
  });
  const provisioner = await Worker.create({
    ...common,
    taskQueue: provisioningQueue(config.temporal.taskQueue),
    tuner: {
      activityTaskSlotSupplier: capacity.slotSupplier(),
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    },
  });
  // Webhook deliveries: their POSTs have slots of their own, so slow receivers never delay runs.
  const webhooks = await Worker.create({
    ...common,
    taskQueue: webhookQueue(config.temporal.taskQueue),
    activities: createWebhookActivities({ dataSource, config, logger, temporal, secretsKeyring, outboundRules }),
  });
  await ensureServiceSchedules(temporal, config);
  const workers = [shared, workspace, provisioner, webhooks];

  // The lease says this worker is alive, busy or not; runs give up its workspaces only when it lapses.
  const renewLease = () =>
    renewWorkerLease(dataSource.manager, {
      workspaceQueue,
      capacity: capacity.capacity,
      inUse: capacity.inUse(),
      leaseSeconds: config.worker.leaseSeconds,
    });
  await renewLease();
  runLimitsEnforced.set(sandbox.runLimits ? 1 : 0);
  diskLimitsEnforced.set(sandbox.diskLimits ? 1 : 0);
  let sweeper: ReturnType<typeof startWorkspaceSweeper> | undefined;
  return {
    workspaceQueue,
    runLimits: `${sandbox.runLimits ?? 'off (AGENT_RUN_LIMITS=off): per-process limits only'}; disk: ${diskLimitsOf(sandbox, config)}`,
    harnesses: harnessOffer(),
    metrics: workerCapacityMetrics({
      slots: () => ({ used: capacity.occupied(), capacity: capacity.capacity }),
      workspaceDir: config.workspace.dir,
    }),
    async run() {
      const timer = setInterval(
        () =>
          void renewLease().catch((err: unknown) => logger.warn('could not renew the worker lease', { error: err })),
        Math.max(1000, (config.worker.leaseSeconds * 1000) / 4),
      );
      const dispatcher = startWebhookDispatcher({ dataSource, temporal, config, logger });
      sweeper = startWorkspaceSweeper({
        dataSource,
        sandbox,
        mcpSessions,
        root: config.workspace.dir,
        workerId: config.worker.id,
        workspaceQueue,
        logger,
        intervalSeconds: config.worker.sweepIntervalSeconds,
        images,
        restoreMode: config.restoreMode,
      });
      try {
        await Promise.all(workers.map((w) => w.run()));
      } finally {
        clearInterval(timer);
        // Drained on purpose: a task still waiting on this worker's queue finds it gone at once.
        if (drain.draining) await releaseWorkerLease(dataSource.manager, workspaceQueue);
        await sweeper.stop();
        await dispatcher.stop();
        await mcpSessions.closeAll();
      }
    },
    sweepWorkspaces: () => {
      if (!sweeper) throw new Error('the worker is not running');
      return sweeper.sweep();
    },
    shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    },
    /**
     * SIGTERM: takes no new work (runs, provisioning, webhook deliveries stop being polled here),
     * refuses its runs' next steps so that they go on elsewhere at once, lets the steps in flight
     * finish for up to WORKER_DRAIN_SECONDS, then stops (a step still running then is cancelled
     * and retried elsewhere, "interrupted" in its transcript).
     */
    async drain() {
      if (drain.draining) return;
      logger.info('draining: no new work; the steps in flight may finish (a second SIGTERM or Ctrl-C stops now)', {
        drain_seconds: config.worker.drainSeconds,
      });
      const settling = drain.settled(config.worker.drainSeconds * 1000);
      for (const w of [shared, provisioner, webhooks]) if (w.getState() === 'RUNNING') w.shutdown();
      const outcome = await settling;
      logger.info(
        outcome === 'idle'
          ? 'drained: no step in flight; stopping'
          : 'WORKER_DRAIN_SECONDS passed: stopping the steps still in flight (they are retried elsewhere)',
      );
      if (workspace.getState() === 'RUNNING') workspace.shutdown();
    },
    /** Whether a drain started. */
    isDraining: () => drain.draining,
    getState: () => shared.getState(),
  };
}

/** How the runs' files are limited on this worker, as /readyz and the start-up lines say it. */
function diskLimitsOf(sandbox: Sandbox, config: Config): string {
  if (sandbox.diskLimits) return sandbox.diskLimits;
  if (config.sandbox.workspaceMaxBytes <= 0) return 'none (AGENT_WORKSPACE_MAX_BYTES=0)';
  return 'measured after the fact (AGENT_DISK_LIMITS=measure)';
}
