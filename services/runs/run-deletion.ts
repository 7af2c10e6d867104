import type { Client } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { ApiError, notFound } from '../../core/api-error';
import { isUuid } from '../../core/ids';
import type { Logger } from '../../core/logger';
import { runsDeleted } from '../../core/metrics';
import { isTerminal } from '../../core/run-state';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { deleteRunRows, expiredRunIds, lockRunsWithDescendants } from '../../db/run-deletion';
import { findRun } from '../../db/run-reads';
import { endedTeamRunIds } from '../../db/team-deletion';
import { runWorkflowId } from '../../workflows/run-contract';
import { createAuditLog, serviceActor } from '../audit/audit-log';
import { assertAdmin } from '../team-roles';

/** gRPC's NOT_FOUND: no such workflow execution. */
const GRPC_NOT_FOUND = 5;

/**
 * Deleting runs in bulk (retention, a team) pauses after each tree as long as deleting it took:
 * it takes at most about half of what PostgreSQL and Temporal could give it, however loaded they
 * are, so that the API's requests meanwhile stay within twice their usual time (bench:retention).
 */
const PAUSE_PER_WORK = 1;

interface DeletedRun {
  runId: string;
  teamId: string;
}

export interface RunDeletionDeps {
  dataSource: DataSource;
  temporal: Client;
  logger: Logger;
  /** Every call to Temporal has this deadline. */
  rpcTimeoutMs: number;
}

/**
 * Deleting runs with everything they left (docs/concepts.md, "Deleting runs"), for the API's
 * `DELETE /agent/runs/{runId}` and for retention: the run and its descendants, all ended; their
 * workflows are ended first (a run that ended may still wait for a follow-up), then their rows
 * go in one transaction, then their histories in Temporal. The objects the rows named go with
 * the object collector's next passes.
 */
export function createRunDeletion({ dataSource, temporal, logger, rpcTimeoutMs }: RunDeletionDeps) {
  const audit = createAuditLog({ dataSource, logger });
  const withinDeadline = <T>(call: () => Promise<T>): Promise<T> =>
    temporal.withDeadline(Date.now() + rpcTimeoutMs, call);

  /** Deletes one execution of a workflow (its latest without `runId`); false when there is none. */
  async function deleteExecution(workflowId: string, runId?: string): Promise<boolean> {
    try {
      await withinDeadline(() =>
        temporal.workflowService.deleteWorkflowExecution({
          namespace: temporal.options.namespace,
          workflowExecution: { workflowId, ...(runId ? { runId } : {}) },
        }),
      );
      return true;
    } catch (err) {
      if ((err as { code?: number }).code !== GRPC_NOT_FOUND) throw err;
      return false;
    }
  }

  /**
   * Ends a run's workflow and deletes its latest execution: one still open (a run that ended
   * waits for a follow-up within its idle window) is terminated and deleted as it closes.
   * (Terminating it first would make the deletion wait for the close to be processed, retrying
   * with backoff: minutes on a busy Temporal.)
   */
  function endWorkflow(runId: string): Promise<boolean> {
    return deleteExecution(runWorkflowId(runId));
  }

  /**
   * Deletes the runs' earlier executions (a workflow that continued as new) from Temporal's
   * history. After the rows are gone: one left behind (Temporal unreachable) is closed, and the
   * namespace's retention removes it (docs/operations.md). Only for runs whose latest execution
   * was still there: the earlier ones of a run whose latest is gone closed before it, so the
   * namespace's retention removed them first (most runs retention deletes: one list query each
   * saved).
   */
  async function deleteHistories(runIds: string[]): Promise<void> {
    for (const runId of runIds) {
      const workflowId = runWorkflowId(runId);
      try {
        for await (const execution of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
          await deleteExecution(workflowId, execution.runId);
      } catch (err) {
        logger.warn("a deleted run's workflow history stays until the namespace's retention removes it", {
          run_id: runId,
          error: err,
        });
      }
    }
  }

  /**
   * Deletes the runs and their descendants when none is live; otherwise deletes nothing and
   * answers the live ones. Empty when none of them exists any more.
   */
  async function deleteTrees(rootIds: string[]): Promise<{ deleted: DeletedRun[]; live: string[] }> {
    const outcome = await dataSource.transaction(async (tx) => {
      const runs = await lockRunsWithDescendants(tx, rootIds);
      const live = runs.filter((r) => !isTerminal(r.state)).map((r) => r.runId);
      if (live.length) return { deleted: [], live, inTemporal: [] };
      const ids = runs.map((r) => r.runId);
      const deleted = runs.map(({ runId, teamId }) => ({ runId, teamId }));
      const inTemporal: string[] = [];
      // While the rows are locked: a follow-up waits, then finds no run.
      for (const runId of ids) if (await endWorkflow(runId)) inTemporal.push(runId);
      await deleteRunRows(tx, ids);
      return { deleted, live: [], inTemporal };
    });
    await deleteHistories(outcome.inTemporal);
    return { deleted: outcome.deleted, live: outcome.live };
  }

  /** deleteTrees of one tree, then the pause of bulk deletion (PAUSE_PER_WORK). */
  async function deleteTreePaced(runId: string): Promise<{ deleted: DeletedRun[]; live: string[] }> {
    const started = performance.now();
    const outcome = await deleteTrees([runId]);
    await sleep((performance.now() - started) * PAUSE_PER_WORK);
    return outcome;
  }

  /** One event per run retention deleted, descendants too: each run's own history ends with it. */
  function recordRetentionDeletion(run: DeletedRun, rootRunId: string, days: number): Promise<void> {
    return audit.record({
      teamId: run.teamId,
      action: 'run.delete',
      outcome: 'success',
      actor: serviceActor('retention'),
      resource: { type: 'run', id: run.runId },
      details: { reason: 'retention', retention_days: days, root_run_id: rootRunId },
    });
  }

  return {
    /** `DELETE /agent/runs/{runId}`: an admin key of the run's team; a live run (or descendant) is 409. */
    async deleteRun(principal: AuthenticatedPrincipal, runId: string): Promise<void> {
      if (!isUuid(runId) || !(await findRun(dataSource.manager, runId, principal.teamId)))
        throw notFound(`No run ${runId}.`);
      assertAdmin(principal, 'delete runs');
      const { deleted, live } = await deleteTrees([runId]);
      if (live.length) {
        const which = live.includes(runId) ? `Run ${runId} is` : `Its descendant run ${live[0]} is`;
        throw new ApiError(
          'conflict',
          `${which} still live; nothing was deleted. Cancel it first (POST /agent/runs/{runId}/cancel), then delete.`,
          { retryable: false },
        );
      }
      if (deleted.length === 0) throw notFound(`No run ${runId}.`);
      runsDeleted.inc({ reason: 'api' }, deleted.length);
    },

    /**
     * Retention: deletes up to `batch` ended runs (with their descendants) that ended more than
     * `days` days ago, for `budgetMs` at most; `more` when there may be others.
     */
    async deleteExpiredRuns(
      days: number,
      batch: number,
      budgetMs = Infinity,
    ): Promise<{ deleted: number; more: boolean }> {
      const started = performance.now();
      const endedBefore = new Date(Date.now() - days * 86_400_000);
      const ids = await expiredRunIds(dataSource.manager, endedBefore, batch);
      let deleted = 0;
      // One tree per transaction: short locks, however many runs expire at once.
      for (const runId of ids) {
        if (performance.now() - started > budgetMs) return { deleted, more: true };
        const tree = await deleteTreePaced(runId);
        for (const run of tree.deleted) await recordRetentionDeletion(run, runId, days);
        deleted += tree.deleted.length;
      }
      return { deleted, more: ids.length === batch };
    },

    /**
     * Deleting a team (services/teams/team-deletion.ts): up to `batch` of the team's ended runs,
     * each with its descendants in a transaction of its own, as retention does; `live`, the live
     * runs that kept a tree (and nothing of it) from going.
     */
    async deleteTeamRuns(teamId: string, batch: number): Promise<{ deleted: number; live: string[]; more: boolean }> {
      const ids = await endedTeamRunIds(dataSource.manager, teamId, batch);
      let deleted = 0;
      const live: string[] = [];
      for (const runId of ids) {
        const outcome = await deleteTreePaced(runId);
        deleted += outcome.deleted.length;
        live.push(...outcome.live);
      }
      return { deleted, live, more: ids.length === batch };
    },
  };
}
