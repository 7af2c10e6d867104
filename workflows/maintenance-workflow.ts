import { proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import type { MaintenanceResult } from './maintenance-contract';

/** One firing of the maintenance Schedule: prunes expired records, a batch per activity call. */
export async function maintenanceWorkflow(): Promise<MaintenanceResult> {
  const { pruneExpiredIdempotencyRecords } = proxyActivities<RunActivities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 3 },
  });
  let idempotencyRecordsPruned = 0;
  for (;;) {
    const { pruned, more } = await pruneExpiredIdempotencyRecords();
    idempotencyRecordsPruned += pruned;
    if (!more) return { idempotencyRecordsPruned };
  }
}
