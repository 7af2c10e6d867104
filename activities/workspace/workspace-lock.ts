import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { workspaceLockFile } from './workspace-paths';

/**
 * A lock left by a worker that died is stale 10 s after its last refresh. Waiting lasts as long
 * as a removal of a large workspace may take (about 15 minutes); the activities that wait
 * heartbeat meanwhile.
 */
const LOCK_OPTIONS = {
  stale: 10_000,
  update: 2_000,
  realpath: false,
  onCompromised: () => undefined,
  retries: { retries: 900, minTimeout: 100, maxTimeout: 1_000 },
};

/**
 * Runs `work` holding the run's workspace lock on this host (proper-lockfile, so workers
 * sharing the workspace directory take turns too): who owns the run's directory is decided, and
 * a workspace is removed, one at a time.
 */
export async function withWorkspaceLock<T>(root: string, runId: string, work: () => Promise<T>): Promise<T> {
  const file = workspaceLockFile(root, runId);
  await mkdir(path.dirname(file), { recursive: true });
  const release = await lockfile.lock(file, LOCK_OPTIONS);
  try {
    return await work();
  } finally {
    await release().catch(() => undefined);
  }
}
