/**
 * The service's own housekeeping: one Temporal Schedule per task queue starts the maintenance
 * workflow, which prunes what requests leave behind (off the request path). The worker, the
 * workflow and the activity import this module.
 */

export const MAINTENANCE_WORKFLOW_TYPE = 'maintenanceWorkflow';

/** How often maintenance runs. */
export const MAINTENANCE_INTERVAL = '1 hour';

export function maintenanceScheduleId(taskQueue: string): string {
  return `agent-runs-maintenance-${taskQueue}`;
}

export function maintenanceWorkflowId(taskQueue: string): string {
  return `agent-runs-maintenance-${taskQueue}-firing`;
}

/** Firings that took this patch also delete the runs past RUN_RETENTION_DAYS (before the collection). */
export const RUN_RETENTION_PATCH = 'run-retention';

/** Firings that took this patch also delete the audit events past AUDIT_RETENTION_DAYS. */
export const AUDIT_RETENTION_PATCH = 'audit-retention';

/** Firings that took this patch also collect the object store's unnamed objects. */
export const OBJECT_COLLECTION_PATCH = 'object-collection';

/** Firings that took this patch also ask forges without webhooks for their pull requests' status. */
export const PULL_REQUEST_POLL_PATCH = 'pull-request-poll';

export interface MaintenanceResult {
  /** Idempotency records past their 24 hours. */
  idempotencyRecordsPruned: number;
  /** Runs deleted past RUN_RETENTION_DAYS (with their descendants). */
  runsDeleted?: number;
  /** Audit events deleted past AUDIT_RETENTION_DAYS. */
  auditEventsPruned?: number;
  /** Pull requests whose forge was asked, and those whose status changed. */
  pullRequests?: { checked: number; changed: number };
  /** What the collector went through and removed, and the store as its last whole cycle counted it. */
  objects?: {
    partitions: number;
    deleted: number;
    deletedBytes: number;
    storeObjects: number | null;
    storeBytes: number | null;
  };
}
