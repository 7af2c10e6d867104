import { Context } from '@temporalio/activity';
import { objectsCollected, objectStoreBytes, objectStoreObjects, runsDeleted } from '../core/metrics';
import { pruneExpiredIdempotencyRecords } from '../db/idempotency-records';
import { collectUnreferencedObjects, type CollectionResult } from '../services/objects/object-collection';
import { pausedForRestore } from '../services/restore/restore-mode';
import { createRunDeletion } from '../services/runs/run-deletion';
import { pruneExpiredAuditEvents } from '../services/audit/audit-retention';
import { createPullRequestPoll, type CredentialFor } from '../services/pull-requests/pull-request-poll';
import { pushCredential } from './delivery/git-credential';
import { DeliveryFailure } from './delivery/delivery-failures';
import type { ActivityDeps } from './deps';

/** Records one call deletes at most: short transactions, however much has piled up. */
const PRUNE_BATCH = 5000;
/** Pull requests one call asks their forges about. */
const POLL_BATCH = 20;
/** Expired runs one call deletes at most (each with its descendants, one transaction each). */
const RETENTION_BATCH = 50;
/** How long one call goes on deleting: half its start-to-close timeout, however slow the database is. */
const RETENTION_BUDGET_MS = 60_000;
/** How long one firing's collection goes on: the firing's workflow has five minutes in all. */
const COLLECTION_BUDGET_MS = 3 * 60_000;

const PAUSED_COLLECTION: CollectionResult = {
  partitions: 0,
  deleted: 0,
  deletedBytes: 0,
  storeObjects: null,
  storeBytes: null,
};

/**
 * What reads a delivered pull request's status: the credential that delivered it (the team's
 * `git_credentials` secret for the host, or GIT_TOKEN where it may push), else GIT_TOKEN, which
 * clones already read with; none: the forge is not asked.
 */
function teamReadCredential({
  dataSource,
  config,
  secretsKeyring,
}: Pick<ActivityDeps, 'dataSource' | 'config' | 'secretsKeyring'>): CredentialFor {
  return async (pullRequest) => {
    try {
      const deps = { config, secretsKeyring };
      return (await pushCredential(dataSource.manager, deps, pullRequest.teamId, pullRequest.host, undefined)).token;
    } catch (err) {
      if (!(err instanceof DeliveryFailure)) throw err;
      return config.workspace.gitToken;
    }
  };
}

/** The maintenance workflow's activities (workflows/maintenance-workflow.ts). */
export function createMaintenanceActivities({
  dataSource,
  objectStore,
  config,
  temporal,
  logger,
  secretsKeyring,
}: Pick<ActivityDeps, 'dataSource' | 'objectStore' | 'config' | 'temporal' | 'logger' | 'secretsKeyring'>) {
  const deletion = createRunDeletion({ dataSource, temporal, logger, rpcTimeoutMs: config.temporal.rpcTimeoutMs });
  const poll = createPullRequestPoll({
    dataSource,
    forges: config.workspace.gitForges,
    webhookHosts: Object.keys(config.forgeStatus.webhookSecrets),
    staleSeconds: config.forgeStatus.pollStaleSeconds,
    credentialFor: teamReadCredential({ dataSource, config, secretsKeyring }),
    logger,
  });
  return {
    /**
     * Asks the forges about a batch of pull requests on hosts without webhooks; in restore mode
     * too: what the forge says now is true whatever the database restored.
     */
    async pollPullRequestStatuses(): Promise<{ checked: number; changed: number; more: boolean }> {
      return poll.pollBatch(POLL_BATCH);
    },

    /**
     * Deletes a batch of the runs that ended more than RUN_RETENTION_DAYS ago (none when it is
     * unset, or in restore mode: a run a restored database says ended long ago may be working).
     */
    async deleteExpiredRuns(): Promise<{ deleted: number; more: boolean }> {
      if (config.runRetentionDays === undefined) return { deleted: 0, more: false };
      if (pausedForRestore(config.restoreMode, logger, 'run_retention')) return { deleted: 0, more: false };
      const result = await deletion.deleteExpiredRuns(config.runRetentionDays, RETENTION_BATCH, RETENTION_BUDGET_MS);
      runsDeleted.inc({ reason: 'retention' }, result.deleted);
      return result;
    },

    /** Deletes a batch of the audit events older than AUDIT_RETENTION_DAYS (none when it is unset). */
    async pruneExpiredAuditEvents(): Promise<{ pruned: number; more: boolean }> {
      if (config.auditRetentionDays === undefined) return { pruned: 0, more: false };
      return pruneExpiredAuditEvents(dataSource, config.auditRetentionDays);
    },

    async pruneExpiredIdempotencyRecords(): Promise<{ pruned: number; more: boolean }> {
      const pruned = await pruneExpiredIdempotencyRecords(dataSource.manager, PRUNE_BATCH);
      return { pruned, more: pruned === PRUNE_BATCH };
    },

    /**
     * Removes the objects no row has named for OBJECT_STORE_GRACE_SECONDS, and counts the store (a
     * few minutes' worth a firing). Nothing in restore mode: a restored database does not name
     * what was written after its backup.
     */
    async collectUnreferencedObjects(): Promise<CollectionResult> {
      if (pausedForRestore(config.restoreMode, logger, 'object_collection')) return PAUSED_COLLECTION;
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
