import { Context } from '@temporalio/activity';
import { objectsCollected, objectStoreBytes, objectStoreObjects } from '../core/metrics';
import { pruneExpiredIdempotencyRecords } from '../db/idempotency-records';
import { collectUnreferencedObjects, type CollectionResult } from '../services/objects/object-collection';
import type { ActivityDeps } from './deps';

/** Records one call deletes at most: short transactions, however much has piled up. */
const PRUNE_BATCH = 5000;
/** How long one firing's collection goes on: the firing's workflow has five minutes in all. */
const COLLECTION_BUDGET_MS = 3 * 60_000;

/** The maintenance workflow's activities (workflows/maintenance-workflow.ts). */
export function createMaintenanceActivities({
  dataSource,
  objectStore,
  config,
}: Pick<ActivityDeps, 'dataSource' | 'objectStore' | 'config'>) {
  return {
    async pruneExpiredIdempotencyRecords(): Promise<{ pruned: number; more: boolean }> {
      const pruned = await pruneExpiredIdempotencyRecords(dataSource.manager, PRUNE_BATCH);
      return { pruned, more: pruned === PRUNE_BATCH };
    },

    /** Removes the objects no row has named for OBJECT_STORE_GRACE_SECONDS, and counts the store (a few minutes' worth a firing). */
    async collectUnreferencedObjects(): Promise<CollectionResult> {
      const ctx = Context.current();
      const result = await collectUnreferencedObjects(dataSource, objectStore, {
        graceSeconds: config.objectGraceSeconds,
        budgetMs: COLLECTION_BUDGET_MS,
        heartbeat: () => ctx.heartbeat(),
      });
      if (result.storeBytes !== null) objectStoreBytes.set(result.storeBytes);
      if (result.storeObjects !== null) objectStoreObjects.set(result.storeObjects);
      objectsCollected.inc(result.deletedBytes);
      return result;
    },
  };
}
