import { createAuditLog, serviceActor } from '../audit/audit-log';
import { createCancellation } from './cancel-run';
import { createRunDeletion } from './run-deletion';
import { createInterruption } from './interrupt-run';
import { checkCreateRequest } from './create-request';
import { createRunCreation } from './create-run';
import { createFollowups, type FollowupOutcome } from './followups';
import { createApprovalDecisions } from './approval-decisions';
import type { RunPrincipal } from './run-executor';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import { createRunWrites, type RunServiceDeps } from './run-writes';
import { REPLAYED_HEADER, type StoredResponse } from './idempotency';
import type { RunState } from '../../core/run-state';
import { refuseNewWorkInRestoreMode } from '../restore/restore-mode';

export type { RunServiceDeps } from './run-writes';

/**
 * Creates, steers and cancels runs: PostgreSQL and Temporal change together or not at all. The
 * one way a run is made, used by the API, schedule firings, dispatches to factories and the runs
 * a factory agent dispatches.
 */
export function createRunService(deps: RunServiceDeps) {
  const writes = createRunWrites(deps);
  const creation = createRunCreation(deps, writes);
  const approvals = createApprovalDecisions(deps, writes);
  const followups = createFollowups(deps, writes, approvals);
  const audit = createAuditLog(deps);
  // In restore mode nothing new starts from outside (the database may be restored again); a
  // running parent's dispatches are part of the work that goes on.
  const refuseInRestoreMode = () => refuseNewWorkInRestoreMode(deps.config.restoreMode);
  return {
    /**
     * Checks what a create request asks for before anything is recorded (a schedule checks its
     * run request here too, when it is created or changed). Returns the skill the run uses.
     */
    checkCreateRequest(_principal: RunPrincipal, body: CreateRunRequest, modelField?: string): string | undefined {
      return checkCreateRequest(deps.config, body, modelField);
    },
    /** `POST /agent/runs`, and every firing of a schedule (`origin`: its source and schedule). */
    async createRun(...args: Parameters<typeof creation.createRun>): Promise<RunAccepted> {
      refuseInRestoreMode();
      return accepted(await creation.createRun(...args));
    },
    /** `POST /agent/runs/{runId}/fork`: a new run from a checkpoint of one of the team's runs. */
    async forkRun(...args: Parameters<typeof creation.forkRun>): Promise<RunAccepted> {
      refuseInRestoreMode();
      return accepted(await creation.forkRun(...args));
    },
    /** `POST /agent/factories/{uid}/runs`: a run of the factory's foreman. */
    async dispatchToFactory(...args: Parameters<typeof creation.dispatchToFactory>): Promise<RunAccepted> {
      refuseInRestoreMode();
      return accepted(await creation.dispatchToFactory(...args));
    },
    /** A factory agent's `dispatch_agent`: a child run, its workflow started by its parent's (recorded as the parent run's doing). */
    async createChildRun(...args: Parameters<typeof creation.createChildRun>): Promise<RunAccepted> {
      const child = accepted(await creation.createChildRun(...args));
      const [parent, { agentUid }] = args;
      if (!child.replayed) {
        await audit.record({
          teamId: parent.teamId,
          action: 'run.create',
          outcome: 'success',
          actor: serviceActor(`run:${parent.runId}`),
          resource: { type: 'run', id: child.runId },
          details: { source: 'ORCHESTRATION', parent_run_id: parent.runId, agent_uid: agentUid },
        });
      }
      return child;
    },
    async sendFollowup(...args: Parameters<typeof followups.sendFollowup>): Promise<RunAccepted> {
      refuseInRestoreMode();
      return accepted(await followups.sendFollowup(...args));
    },
    /** `POST /agent/runs/{runId}/approvals/{approvalId}`: a person decides a blocked run's waiting call. */
    decideApproval: approvals.decideApproval,
    ...createCancellation(deps, writes),
    ...createInterruption(deps, writes),
    deleteRun: createRunDeletion({ ...deps, rpcTimeoutMs: deps.config.temporal.rpcTimeoutMs }).deleteRun,
  };
}

/** What a create or a follow-up was told: the run, its state then, and whether this was a replay of it. */
export interface RunAccepted {
  runId: string;
  state: RunState;
  /** The answer of an earlier request with the same Idempotency-Key and body; `state` is as it was then. */
  replayed: boolean;
  /** A follow-up's record (none when it decided a blocked run's waiting call) and how it reaches the run. */
  followup?: { id?: string; outcome: FollowupOutcome };
  /** A fork's source run and checkpoint. */
  forkedFrom?: { run_id: string; checkpoint_id: string };
}

function accepted(response: StoredResponse): RunAccepted {
  const body = response.body as {
    run_id: string;
    state: RunState;
    followup_id?: string;
    outcome?: FollowupOutcome;
    forked_from?: RunAccepted['forkedFrom'];
  };
  return {
    runId: body.run_id,
    state: body.state,
    replayed: response.headers[REPLAYED_HEADER] === 'true',
    ...(body.outcome
      ? { followup: { ...(body.followup_id ? { id: body.followup_id } : {}), outcome: body.outcome } }
      : {}),
    ...(body.forked_from ? { forkedFrom: body.forked_from } : {}),
  };
}

/** Who a run is created for: the caller's key, or the creator of the schedule that fires. */
export type { RunPrincipal } from './run-executor';

export type { RunOrigin } from './new-run';
