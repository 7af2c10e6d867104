import { pruneExpiredIdempotencyRecords } from '../db/idempotency-records';
import type { ActivityDeps } from './deps';

/** Records one call deletes at most: short transactions, however much has piled up. */
const PRUNE_BATCH = 5000;

/** The maintenance workflow's activities (workflows/maintenance-workflow.ts). */
export function createMaintenanceActivities({ dataSource }: Pick<ActivityDeps, 'dataSource'>) {
  return {
    async pruneExpiredIdempotencyRecords(): Promise<{ pruned: number; more: boolean }> {
      const pruned = await pruneExpiredIdempotencyRecords(dataSource.manager, PRUNE_BATCH);
      return { pruned, more: pruned === PRUNE_BATCH };
    },
  };
}
