import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker, type NativeConnection, type State, type WorkerOptions } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createActivities } from '../activities';
import { McpSessionCache } from '../activities/tools/mcp-sessions';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';

/** Where `npm run build` writes the prebuilt workflow bundle that production workers load. */
export const WORKFLOW_BUNDLE_PATH = path.resolve(__dirname, '..', 'workflow-bundle.js');

export interface CreateWorkerOptions {
  config: Config;
  dataSource: DataSource;
  connection: NativeConnection;
  logger: Logger;
  /** Overrides the bundle lookup (tests bundle once per test run). */
  workflowBundlePath?: string;
}

/** The run worker of one process: the shared queue (workflows, provisioning) and its workspace queue. */
export interface RunWorker {
  /** The task queue only workers sharing this host's workspace directory poll. */
  workspaceQueue: string;
  run(): Promise<void>;
  shutdown(): void;
  getState(): State;
}

/**
 * A workspace queue per host and workspace directory: a worker restarted on the same machine
 * picks up the workspaces it left, and no other machine ever gets their tasks.
 */
export function workspaceQueueName(config: Config): string {
  const dirHash = createHash('sha256').update(config.workspace.dir).digest('hex').slice(0, 12);
  return `${config.temporal.taskQueue}/workspaces@${os.hostname()}-${dirHash}`;
}

/** Builds the workers: the workflow (prebuilt bundle when present) and the activities. */
export async function createWorker(options: CreateWorkerOptions): Promise<RunWorker> {
  const { config, dataSource, connection, logger } = options;
  const bundlePath =
    options.workflowBundlePath ?? (existsSync(WORKFLOW_BUNDLE_PATH) ? WORKFLOW_BUNDLE_PATH : undefined);
  const workflowSource: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath: require.resolve('../workflows') };
  const workspaceQueue = workspaceQueueName(config);
  const mcpSessions = new McpSessionCache();
  const activities = createActivities({ dataSource, config, logger, workspaceQueue, mcpSessions });
  const common = {
    connection,
    namespace: config.temporal.namespace,
    activities,
    // Heartbeats carry cancellation to a running activity; send them often so a cancel lands in seconds.
    maxHeartbeatThrottleInterval: '1s',
    defaultHeartbeatThrottleInterval: '1s',
    shutdownGraceTime: '10s',
    // A worker that died holding a run's cached workflow hands it to another worker after this.
    stickyQueueScheduleToStartTimeout: '3s',
  } satisfies Partial<WorkerOptions>;
  const shared = await Worker.create({ ...common, taskQueue: config.temporal.taskQueue, ...workflowSource });
  const workspace = await Worker.create({ ...common, taskQueue: workspaceQueue });
  return {
    workspaceQueue,
    async run() {
      try {
        await Promise.all([shared.run(), workspace.run()]);
      } finally {
        await mcpSessions.closeAll();
      }
    },
    shutdown() {
      for (const w of [shared, workspace]) if (w.getState() === 'RUNNING') w.shutdown();
    },
    getState: () => shared.getState(),
  };
}
