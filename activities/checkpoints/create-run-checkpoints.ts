import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import type { Logger } from '../../core/logger';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { forkLauncher } from '../sandbox/launched-process';
import type { Sandbox } from '../sandbox/sandbox';
import { locateSandboxInit } from '../sandbox/sandbox-init-binary';
import { RunCheckpoints } from './run-checkpoints';

/**
 * The worker's checkpoints of its runs' files, in `store`. They need sandbox-init on the host (its
 * `-checkpoint` and `-restore`), which a bubblewrap worker has already; a worker without it
 * (AGENT_SANDBOX=none on a machine without Go) takes none and says so.
 */
export async function createRunCheckpoints(deps: {
  config: Config;
  dataSource: DataSource;
  sandbox: Sandbox;
  store: ObjectStore;
  logger: Logger;
}): Promise<RunCheckpoints | undefined> {
  const { config, sandbox, logger } = deps;
  let initPath: string;
  try {
    initPath = await locateSandboxInit(config.sandbox.initPath);
  } catch (err) {
    logger.warn("this worker takes no checkpoints of its runs' files: a worker that dies loses them", {
      error: (err as Error).message,
    });
    return undefined;
  }
  return new RunCheckpoints({
    dataSource: deps.dataSource,
    store: deps.store,
    tools: { launch: sandbox.hostLauncher ?? forkLauncher, initPath },
    workspaceRoot: config.workspace.dir,
    processUid: sandbox.processUid,
    runPids: (runId) => sandbox.runPids?.(runId) ?? Promise.resolve(undefined),
  });
}
