import { patched, proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import { OBJECT_COLLECTION_PATCH, type MaintenanceResult } from './maintenance-contract';

/**
 * One firing of the maintenance Schedule: prunes expired records, a batch per activity call;
 * then removes the objects of runs' files that no row names any more.
 */
export async function maintenanceWorkflow(): Promise<MaintenanceResult> {
  const { pruneExpiredIdempotencyRecords } = proxyActivities<RunActivities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 3 },
  });
  let idempotencyRecordsPruned = 0;
  for (;;) {
    const { pruned, more } = await pruneExpiredIdempotencyRecords();
    idempotencyRecordsPruned += pruned;
    if (!more) break;
  }
  if (!patched(OBJECT_COLLECTION_PATCH)) return { idempotencyRecordsPruned };
  const { collectUnreferencedObjects } = proxyActivities<RunActivities>({
    // Three minutes' worth of the store a firing (the firing has five); it heartbeats each batch.
    startToCloseTimeout: '4 minutes',
    heartbeatTimeout: '1 minute',
    retry: { maximumAttempts: 2 },
  });
  const objects = await collectUnreferencedObjects();
  return { idempotencyRecordsPruned, objects };
}
