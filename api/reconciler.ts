import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Logger } from '../core/logger';
import { findUnfinishedRuns } from '../db/unfinished-run-reads';
import { pausedForRestore } from '../services/restore/restore-mode';
import { createRunTransitions } from '../services/runs/run-transitions';
import { runWorkflowId } from '../workflows/run-contract';

export interface ReconcilerOptions {
  dataSource: DataSource;
  temporal: Client;
  logger: Logger;
  intervalSeconds: number;
  /** How long a run may go without an update before its workflow is checked (default 30). */
  quietSeconds?: number;
  /** RESTORE_MODE: every pass only logs that it is paused (a restored database's word settles nothing). */
  restoreMode?: boolean;
}

const PAGE = 200;
const DESCRIBE_DEADLINE_MS = 5000;
const PARALLEL = 10;

const WHAT_HAPPENED: Record<string, string> = {
  TERMINATED: 'was terminated (by an operator or a tool acting on Temporal directly)',
  TIMED_OUT: 'timed out',
  FAILED: 'failed (a bug in the workflow; see the workflow in the Temporal UI)',
  COMPLETED: 'completed without recording how the run ended',
};

/**
 * Finds runs whose workflow has closed while the run still reads QUEUED, INPROGRESS or BLOCKED (an
 * operator terminated it, it timed out, it failed on a bug) and records how they ended through
 * the run service's transitions (services/runs/run-transitions.ts), so no run stays in progress forever. Every API instance runs one; the transitions are idempotent,
 * and no database connection is held while Temporal answers.
 */
export function startReconciler({
  dataSource,
  temporal,
  logger,
  intervalSeconds,
  quietSeconds = 30,
  restoreMode = false,
}: ReconcilerOptions): {
  stop(): Promise<void>;
  /** One pass now (tests and operators); resolves with the runs it settled. */
  runOnce(): Promise<string[]>;
} {
  const transitions = createRunTransitions({ dataSource, logger });
  let running: Promise<string[]> | undefined;
  /**
   * Runs whose workflow Temporal said it did not know, in the last pass. One answer is not taken
   * for the workflow's loss: a server coming back from an outage has answered NotFound for
   * workflows it had (which then ran on, their runs already recorded ERROR). The next pass decides.
   */
  let notFoundBefore = new Set<string>();
  let notFoundNow = new Set<string>();
  /** Settles one run if its workflow has closed; says whether it did. */
  const settle = async ({ runId, turn }: { runId: string; turn: number }): Promise<boolean> => {
    let status: string;
    try {
      status = (
        await temporal.withDeadline(Date.now() + DESCRIBE_DEADLINE_MS, () =>
          temporal.workflow.getHandle(runWorkflowId(runId)).describe(),
        )
      ).status.name;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      status = 'NOT_FOUND';
    }
    // Still open (a paused workflow is an operator's choice, not an end).
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW' || status === 'PAUSED') return false;
    if (status === 'NOT_FOUND' && !notFoundBefore.has(runId)) {
      notFoundNow.add(runId);
      return false;
    }
    // Its start never reached Temporal and taking the run back failed too: the caller was
    // answered 503, so the run is not theirs to find.
    if (status === 'NOT_FOUND' && (await transitions.withdrawUnstarted(runId))) {
      logger.warn('removed a run whose workflow never started', { run_id: runId });
      return true;
    }
    const applied =
      status === 'CANCELLED'
        ? (await transitions.recordCancelled(runId, turn)).applied
        : await transitions.recordTransition({
            runId,
            turn,
            state: 'ERROR',
            statusMessage: {
              message:
                status === 'NOT_FOUND'
                  ? `The run's workflow (${runWorkflowId(runId)}) no longer exists in Temporal, so the run cannot go on; send a follow-up to start it again.`
                  : `The run's workflow (${runWorkflowId(runId)}) ${WHAT_HAPPENED[status] ?? `closed as ${status}`} before the run ended; send a follow-up to start it again.`,
              error_code: 'internal_error',
              retryable: true,
            },
          });
    if (applied) logger.warn('reconciled a run whose workflow had closed', { run_id: runId, workflow_status: status });
    return applied;
  };

  // Every unfinished run each pass, a page at a time, a few workflows described at once.
  const pass = async (): Promise<string[]> => {
    if (pausedForRestore(restoreMode, logger, 'reconciler')) return [];
    const settled: string[] = [];
    for (let after = ''; ;) {
      const page = await findUnfinishedRuns(dataSource.manager, quietSeconds, PAGE, after);
      for (let i = 0; i < page.length; i += PARALLEL) {
        const batch = page.slice(i, i + PARALLEL);
        const results = await Promise.all(batch.map(settle));
        batch.forEach((run, j) => results[j] && settled.push(run.runId));
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.runId;
    }
    notFoundBefore = notFoundNow;
    notFoundNow = new Set();
    return settled;
  };
  const runOnce = () => {
    // Housekeeping, not a request: untraced, or each pass's describes would be a trace each.
    running ??= context.with(suppressTracing(context.active()), pass).finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => {
    void runOnce().catch((err: unknown) => logger.warn('reconciler pass failed', { error: err }));
  }, intervalSeconds * 1000);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
