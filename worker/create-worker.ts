import path from 'node:path';
import { existsSync } from 'node:fs';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { DataSource } from 'typeorm';
import { createActivities } from '../activities';
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
  identity?: string;
}

/** Builds the run worker: the workflow (prebuilt bundle when present) and its activities. */
export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  const { config, dataSource, connection, logger } = options;
  const bundlePath =
    options.workflowBundlePath ?? (existsSync(WORKFLOW_BUNDLE_PATH) ? WORKFLOW_BUNDLE_PATH : undefined);
  const workflowSource: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> = bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath: require.resolve('../workflows') };
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    ...workflowSource,
    activities: createActivities({ dataSource, config, logger }),
    // Heartbeats carry cancellation to a running activity; send them often so a cancel lands in seconds.
    maxHeartbeatThrottleInterval: '1s',
    defaultHeartbeatThrottleInterval: '1s',
    shutdownGraceTime: '10s',
  });
}
