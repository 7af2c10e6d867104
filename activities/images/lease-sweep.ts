import type { EntityManager } from 'typeorm';
import { isUuid } from '../../core/ids';
import { existingEnvironments } from '../../db/environment-reads';
import { runsForSweep } from '../../db/run-workspaces';
import type { ImageStore } from './image-store';

/**
 * Releases the image leases of runs that no longer exist or have settled (ended, past their idle
 * window and `graceSeconds`). A run's lease normally ends with its workspace; this catches those
 * of a worker that died and never came back (its workspace directory is nobody's to sweep), so
 * that their images can be evicted again. Returns the runs released.
 */
export async function releaseLeasesNothingUses(
  images: ImageStore,
  manager: EntityManager,
  graceSeconds: number,
): Promise<string[]> {
  const holders = (await images.leaseHolders()).filter(isUuid);
  if (holders.length === 0) return [];
  const stale = (await runsForSweep(manager, holders, graceSeconds))
    .filter((run) => !run.exists || run.settled)
    .map((run) => run.runId);
  for (const runId of stale) await images.release(runId);
  return stale;
}

/**
 * Removes the setup snapshots nothing will restore: past ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS, or of
 * an environment that was deleted. Returns the keys removed.
 */
export function removeSnapshotsNothingNeeds(images: ImageStore, manager: EntityManager): Promise<string[]> {
  return images.snapshots.removeUnneeded((environments) => existingEnvironments(manager, environments));
}
