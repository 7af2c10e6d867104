import { patched, proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import {
  AUDIT_RETENTION_PATCH,
  OBJECT_COLLECTION_PATCH,
  PULL_REQUEST_POLL_PATCH,
  RUN_RETENTION_PATCH,
  type MaintenanceResult,
} from './maintenance-contract';

/** Batches of pull requests one firing asks about at most (a minute's worth of forge calls); the next firing goes on. */
const POLL_BATCHES_PER_FIRING = 5;
/** Batches of expired runs one firing deletes at most: its history stays small; the next firing goes on. */
const RETENTION_BATCHES_PER_FIRING = 100;

/**
 * One firing of the maintenance Schedule: prunes expired records, a batch per activity call;
 * deletes the runs past their retention, then the audit events past theirs; asks forges without
 * webhooks for their pull requests' status; then removes the objects of runs' files that no row
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
  const pullRequests = patched(PULL_REQUEST_POLL_PATCH) ? await pollPullRequestStatuses() : undefined;
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
    ...(pullRequests === undefined ? {} : { pullRequests }),
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

/** Asks forges without webhooks about their pull requests, a batch per activity call. */
async function pollPullRequestStatuses(): Promise<{ checked: number; changed: number }> {
  const activities = proxyActivities<RunActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 2 },
  });
  const total = { checked: 0, changed: 0 };
  for (let batch = 0; batch < POLL_BATCHES_PER_FIRING; batch++) {
    const result = await activities.pollPullRequestStatuses();
    total.checked += result.checked;
    total.changed += result.changed;
    if (!result.more) break;
  }
  return total;
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
