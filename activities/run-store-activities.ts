import { ApplicationFailure } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { RunState } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import { leaseStatus } from '../db/worker-leases';
import { admitRunTurn, runsToAdmitNext, teamOfRun } from '../db/team-admission';
import { createRunTransitions } from '../services/runs/run-transitions';
import { createApprovalRequests } from '../services/runs/approval-requests';
import { admissionSignal, RunFailureType, runWorkflowId } from '../workflows/run-contract';
import type { ActivityDeps } from './deps';

/** Activities that write the run's state to PostgreSQL; each is one idempotent transaction. */
export function createRunStoreActivities({ dataSource, config, temporal, logger }: ActivityDeps) {
  const maxConcurrent = config.quotas.teamMaxConcurrentRuns;
  const transitions = createRunTransitions({ dataSource, logger });
  const approvals = createApprovalRequests({ dataSource, logger });

  /** Tells the team's oldest waiting runs, as many as it has free slots, to look again. */
  async function wakeTeam(teamId: string): Promise<string[]> {
    const runIds = await dataSource.transaction((tx) => runsToAdmitNext(tx, teamId, maxConcurrent));
    for (const id of runIds) {
      await temporal.workflow
        .getHandle(runWorkflowId(id))
        .signal(admissionSignal)
        .catch((err: unknown) => {
          // Its workflow closed meanwhile (the reconciler settles the run); the others still go.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
    }
    return runIds;
  }

  return {
    /**
     * Admits the run's turn under its team's TEAM_MAX_CONCURRENT_RUNS (in the order runs were
     * queued), or records on the run that it waits for a slot. Once admitted, wakes the next
     * waiting runs if slots are still free (they may have looked before this older run did).
     */
    async admitRun({
      runId,
    }: {
      runId: string;
    }): Promise<{ admitted: boolean; turn: number; recheckSeconds?: number }> {
      const admission = await dataSource.transaction((tx) => admitRunTurn(tx, runId, maxConcurrent));
      if (!admission) {
        throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, RunFailureType.RUN_NOT_FOUND);
      }
      const { turn } = admission;
      if (!admission.admitted) {
        logger.debug('run waits for a slot of its team', { run_id: runId });
        return {
          admitted: false,
          turn,
          ...(admission.recheckSeconds ? { recheckSeconds: admission.recheckSeconds } : {}),
        };
      }
      await wakeTeam(admission.teamId);
      return { admitted: true, turn };
    },

    /** A turn of the run ended (or it was cancelled): the team's oldest waiting runs look again for a slot. */
    async wakeWaitingRuns({ runId }: { runId: string }): Promise<{ woken: string[] }> {
      const teamId = await teamOfRun(dataSource.manager, runId);
      return { woken: teamId ? await wakeTeam(teamId) : [] };
    },

    /**
     * Whether the worker serving a workspace queue is alive: it renewed its lease within its own
     * lease length (`leaseSeconds`, the run's setting, only for a worker that never said). When no
     * worker at all renewed lately, the database was away, not the workers: they count as alive.
     */
    async isWorkspaceWorkerAlive({
      workspaceQueue,
      leaseSeconds,
    }: {
      workspaceQueue: string;
      leaseSeconds: number;
    }): Promise<{ alive: boolean; secondsSinceRenewal: number | null }> {
      const lease = await leaseStatus(dataSource.manager, workspaceQueue);
      const limit = lease.leaseSeconds ?? leaseSeconds;
      const nobodyRenewed = lease.freshestAge === null || lease.freshestAge > limit;
      const alive = lease.age !== null && (lease.age <= limit || nobodyRenewed);
      return { alive, secondsSinceRenewal: lease.age };
    },

    /**
     * Starts (or resumes) the turn this execution works on and marks the run INPROGRESS: the
     * current turn when the run is queued or in progress, a new one when it ended and follow-ups
     * wait, or null when there is nothing to do.
     */
    async startTurn({ runId }: { runId: string }): Promise<{ turn: number | null; idleTimeoutMinutes: number }> {
      const started = await transitions.startTurn(runId);
      if (!started) throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, RunFailureType.RUN_NOT_FOUND);
      return started;
    },

    /**
     * Whether a blocked run's call still waits for a person; past its deadline (by the
     * database's clock) it is denied as timed out here, unless someone decided it meanwhile.
     */
    async approvalPending(input: { runId: string; approvalId: string }): Promise<{ pending: boolean }> {
      return { pending: await approvals.stillPending(input) };
    },

    /** A blocked run whose call was decided, admitted again, works on: BLOCKED → INPROGRESS. */
    async resumeRun({ runId, turn }: { runId: string; turn: number }): Promise<{ resumed: boolean }> {
      return { resumed: await transitions.resume(runId, turn) };
    },

    /** A SUCCEEDED run's status message is the agent's answer (cut; whole in the conversation). */
    async recordTransition(input: {
      runId: string;
      turn: number;
      state: RunState;
      statusMessage?: RunStatusMessage;
    }): Promise<{ applied: boolean }> {
      return { applied: await transitions.recordTransition(input) };
    },

    /**
     * Records CANCELLED and says whether a follow-up was sent after the cancel request (it
     * continues the run; one sent before waits for the next follow-up).
     */
    async recordCancelled({
      runId,
      turn,
    }: {
      runId: string;
      /** The turn the execution was on when it was cancelled (absent in histories from before it was named). */
      turn?: number;
    }): Promise<{ applied: boolean; followupAfterCancel: boolean }> {
      return transitions.recordCancelled(runId, turn);
    },
  };
}
