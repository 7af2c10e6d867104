import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import type { ImageStore } from '../images/image-store';
import { releaseLeasesNothingUses, removeSnapshotsNothingNeeds } from '../images/lease-sweep';
import type { Logger } from '../../core/logger';
import { pausedForRestore } from '../../services/restore/restore-mode';
import { workspaceBytesReclaimed, workspacesOnDisk, workspacesRemoved } from '../../core/metrics';
import { runsForSweep, type SweptRun } from '../../db/run-workspaces';
import { diskUsageBytes } from '../sandbox/run-disk';
import type { Sandbox } from '../sandbox/sandbox';
import type { McpSessionCache } from '../tools/mcp-sessions';
import { removeStaleApprovalHookDirs } from '../harness/approval-hook-dir';
import { removeRunWorkspace } from './remove-workspace';
import { withWorkspaceLock } from './workspace-lock';
import { workspaceRootOf } from './workspace-root';

/** How long after a run's idle window its workspace is still left alone (its workflow removes it first). */
const GRACE_SECONDS = 600;

export type SweepReason = 'run_gone' | 'held_elsewhere' | 'settled';

export interface SweepResult {
  kept: number;
  removed: { runId: string; reason: SweepReason; bytes: number }[];
  /** RESTORE_MODE held the pass back: it looked at nothing. */
  paused?: true;
}

export interface WorkspaceSweeperDeps {
  dataSource: DataSource;
  sandbox: Sandbox;
  mcpSessions: McpSessionCache;
  root: string;
  workerId: string;
  workspaceQueue: string;
  logger: Logger;
  intervalSeconds: number;
  /** The machine's image cache: leases of runs nothing will use again are released with each sweep. */
  images?: ImageStore;
  /** RESTORE_MODE: each pass only logs that it is paused (a restored database may not know live runs). */
  restoreMode?: boolean;
}

/**
 * Removes the workspaces on this worker's disk that nothing will use again, from the durable
 * record of who holds each run's workspace (`run_workspaces`), not from activities that may be
 * pending on a dead worker's queue: runs that no longer exist, runs whose workspace another
 * worker (or a newer provisioning) holds, and runs that ended past their idle window. At start
 * and every `intervalSeconds`.
 */
export function startWorkspaceSweeper(deps: WorkspaceSweeperDeps): {
  stop(): Promise<void>;
  sweep(): Promise<SweepResult>;
} {
  let running: Promise<SweepResult> | undefined;
  const sweep = () => (running ??= sweepOnce(deps).finally(() => (running = undefined)));
  const tick = () =>
    void sweep().catch((err: unknown) =>
      deps.logger.warn('workspace sweep failed; the next one retries', { error: err }),
    );
  tick();
  const timer = setInterval(tick, deps.intervalSeconds * 1000);
  timer.unref();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}

/**
 * Why a workspace on this disk is no longer wanted here, or undefined when it is. A workspace
 * another worker holds *in this same directory* is that worker's to remove, and one this worker
 * holds under another id is being provisioned again (which replaces it): both are left alone.
 */
function reasonToRemove(run: SweptRun, deps: WorkspaceSweeperDeps, root: string): SweepReason | undefined {
  if (!run.exists) return 'run_gone';
  if (run.holder && run.holder.workspaceQueue !== deps.workspaceQueue && run.holder.workspaceRoot !== root) {
    return 'held_elsewhere';
  }
  if (run.settled) return 'settled';
  return undefined;
}

async function sweepOnce(deps: WorkspaceSweeperDeps): Promise<SweepResult> {
  // Workspaces, image leases and snapshots alike: each is removed on the database's word.
  if (pausedForRestore(deps.restoreMode ?? false, deps.logger, 'workspace_sweep'))
    return { kept: 0, removed: [], paused: true };
  const entries = existsSync(deps.root) ? await readdir(deps.root, { withFileTypes: true }) : [];
  const runIds = entries.filter((e) => e.isDirectory() && isUuid(e.name)).map((e) => e.name);
  const result: SweepResult = { kept: 0, removed: [] };
  const root = workspaceRootOf(deps.root);
  if (runIds.length > 0) {
    for (const run of await runsForSweep(deps.dataSource.manager, runIds, GRACE_SECONDS)) {
      const reason = reasonToRemove(run, deps, root);
      if (!reason) {
        result.kept += 1;
        continue;
      }
      const bytes = await runFilesBytes(deps.sandbox, run.runId).catch(() => 0);
      // Looked at again under the run's lock: a provisioning may have claimed it meanwhile.
      const removed = await withWorkspaceLock(deps.root, run.runId, async () => {
        const [now] = await runsForSweep(deps.dataSource.manager, [run.runId], GRACE_SECONDS);
        if (!now || !reasonToRemove(now, deps, root)) return false;
        await removeRunWorkspace(deps, run.runId);
        return true;
      });
      if (!removed) {
        result.kept += 1;
        continue;
      }
      workspacesRemoved.inc({ reason });
      workspaceBytesReclaimed.inc(bytes);
      result.removed.push({ runId: run.runId, reason, bytes });
    }
  }
  workspacesOnDisk.set({ worker_id: deps.workerId }, result.kept);
  const hookDirs = await removeStaleApprovalHookDirs(deps.root);
  if (hookDirs) deps.logger.info('removed approval hook directories of invocations a dead worker left', { hookDirs });
  if (deps.images) {
    const released = await releaseLeasesNothingUses(deps.images, deps.dataSource.manager, GRACE_SECONDS);
    if (released.length)
      deps.logger.info('released the image leases of runs nothing will use again', { runs: released });
    const snapshots = await removeSnapshotsNothingNeeds(deps.images, deps.dataSource.manager);
    if (snapshots.length) deps.logger.info('removed setup snapshots nothing will restore', { snapshots });
  }
  if (result.removed.length) {
    deps.logger.info('removed workspaces nothing will use again', {
      removed: result.removed.length,
      bytes: result.removed.reduce((sum, r) => sum + r.bytes, 0),
      reasons: [...new Set(result.removed.map((r) => r.reason))],
    });
  }
  return result;
}

/** What a run's files take: its own filesystem's use, or measured. */
async function runFilesBytes(sandbox: Sandbox, runId: string): Promise<number> {
  const own = await sandbox.runDiskUsage?.(runId);
  return own ? own.bytes : diskUsageBytes(sandbox.runPaths(runId), sandbox.hostLauncher);
}
