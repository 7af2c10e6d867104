import { patched, proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import {
  AUDIT_RETENTION_PATCH,
  OBJECT_COLLECTION_PATCH,
  RUN_RETENTION_PATCH,
  type MaintenanceResult,
} from './maintenance-contract';

/** Batches of expired runs one firing deletes at most: its history stays small; the next firing goes on. */
const RETENTION_BATCHES_PER_FIRING = 100;

/**
 * One firing of the maintenance Schedule: prunes expired records, a batch per activity call;
 * deletes the runs past their retention, then the audit events past theirs; then removes the objects of runs' files that no row
 * names any more.
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
  const runsDeleted = patched(RUN_RETENTION_PATCH) ? await deleteExpiredRuns() : undefined;
  const auditEventsPruned = patched(AUDIT_RETENTION_PATCH) ? await pruneExpiredAuditEvents() : undefined;
  if (!patched(OBJECT_COLLECTION_PATCH)) return { idempotencyRecordsPruned };
  const { collectUnreferencedObjects } = proxyActivities<RunActivities>({
    // Three minutes' worth of the store a firing (the firing has five); it heartbeats each batch.
    startToCloseTimeout: '4 minutes',
    heartbeatTimeout: '1 minute',
    retry: { maximumAttempts: 2 },
  });
  const objects = await collectUnreferencedObjects();
  return {
    idempotencyRecordsPruned,
    ...(runsDeleted === undefined ? {} : { runsDeleted }),
    ...(auditEventsPruned === undefined ? {} : { auditEventsPruned }),
    objects,
  };
}

/** Deletes audit events past AUDIT_RETENTION_DAYS, a batch per team per activity call. */
async function pruneExpiredAuditEvents(): Promise<number> {
  const activities = proxyActivities<RunActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 3 },
  });
  let pruned = 0;
  for (let batch = 0; batch < RETENTION_BATCHES_PER_FIRING; batch++) {
    const result = await activities.pruneExpiredAuditEvents();
    pruned += result.pruned;
    if (!result.more) break;
  }
  return pruned;
}

/** Deletes runs past RUN_RETENTION_DAYS, a batch per activity call. */
async function deleteExpiredRuns(): Promise<number> {
  const activities = proxyActivities<RunActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 3 },
  });
  let deleted = 0;
  for (let batch = 0; batch < RETENTION_BATCHES_PER_FIRING; batch++) {
    const result = await activities.deleteExpiredRuns();
    deleted += result.deleted;
    if (!result.more) break;
  }
  return deleted;
}
