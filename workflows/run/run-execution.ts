import {
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunState, TerminalRunState } from '../../core/run-state';
import type { RunStatusMessage } from '../../core/run-types';
import { createOrchestrator, tellParent } from '../orchestration';
import {
  admissionSignal,
  approvalSignal,
  followupSignal,
  INTERRUPTED_MESSAGE,
  interruptSignal,
  runStateQuery,
  searchAttributes,
  type AgentRunWorkflow,
  type RunWorkflowInput,
  type WaitingApproval,
} from '../run-contract';
import { runActivityProxies, type RunActivityProxies } from './activity-proxies';
import { classifyFailure } from './failures';
import {
  BLOCKED_RELEASE_PATCH,
  DISK_LIMIT_RELEASE_PATCH,
  PULL_REQUEST_DELIVERY_PATCH,
  TEAM_ADMISSION_PATCH,
  WORKSPACE_LEASE_PATCH,
} from './patches';
import { RunWorkspace } from './workspace';
import { showRunState, showWaitingForFollowups } from './run-details';

/** How often a waiting run looks again for a slot on its own, should a wake-up signal be lost. */
const ADMISSION_RECHECK = '1 minute';
/** How often a blocked run looks at its approval on its own, should the decision's signal be lost. */
const APPROVAL_RECHECK_MS = 3_600_000;
/** The least a blocked run waits before it looks again (the database's clock may lag the workflow's). */
const APPROVAL_MIN_WAIT_MS = 1_000;

/**
 * What one execution of a run's workflow holds in memory: its state for queries, whether a
 * follow-up or a freed slot was signalled, the turn it works on, its workspace, and the
 * activities it calls. Its methods are the named steps of agentRunWorkflow.
 */
export class RunExecution {
  followupPending = false;
  private slotMayHaveFreed = false;
  private approvalMayBeDecided = false;
  private state: RunState | 'STARTING' = 'STARTING';
  /** The scope of the turn being worked on; an interrupt cancels it (and only it). */
  private turnScope: CancellationScope | undefined;
  private interrupted = false;
  /** The turn this execution last admitted or started: a cancel is recorded against it, and only it. */
  knownTurn: number | undefined;
  // Asked first, in this order: where a patch is first asked decides where its marker is.
  private readonly leased = patched(WORKSPACE_LEASE_PATCH);
  private readonly admission = patched(TEAM_ADMISSION_PATCH);
  readonly activities: RunActivityProxies;
  readonly workspace: RunWorkspace;
  private readonly orchestrator: ReturnType<typeof createOrchestrator>;

  constructor(private readonly input: RunWorkflowInput) {
    setHandler(followupSignal, () => {
      this.followupPending = true;
    });
    setHandler(interruptSignal, () => {
      if (!this.turnScope) return;
      this.interrupted = true;
      this.turnScope.cancel();
    });
    setHandler(admissionSignal, () => {
      this.slotMayHaveFreed = true;
    });
    setHandler(approvalSignal, () => {
      this.approvalMayBeDecided = true;
    });
    setHandler(runStateQuery, () => this.state);
    this.activities = runActivityProxies(input.settings, this.leased);
    this.workspace = new RunWorkspace(input, this.activities, this.leased);
    this.orchestrator = createOrchestrator(input.runId, this.activities.store);
  }

  get runId(): string {
    return this.input.runId;
  }

  private get parent() {
    return this.input.parentRunId ? { parentRunId: this.input.parentRunId } : {};
  }

  setState(to: RunState): void {
    this.state = to;
    upsertSearchAttributes([{ key: searchAttributes.state, value: to }]);
    showRunState(to);
  }

  /**
   * Before a history grows too long, at a point where the run holds nothing in memory: starts
   * afresh (at `resume`, when the run is in the middle of a turn).
   */
  async continueAsNewIfSuggested(resume?: RunWorkflowInput['resume']): Promise<void> {
    if (!workflowInfo().continueAsNewSuggested) return;
    await continueAsNew<AgentRunWorkflow>({
      runId: this.input.runId,
      settings: this.input.settings,
      workspaceQueue: this.workspace.queue,
      workspaceId: this.workspace.id,
      workerHost: this.input.workerHost,
      ...this.parent,
      ...(resume ? { resume } : {}),
    });
  }

  /** A fresh execution for a follow-up sent after a cancel. */
  async continueAfterCancel(): Promise<never> {
    return continueAsNew<AgentRunWorkflow>({
      runId: this.input.runId,
      settings: this.input.settings,
      workerHost: this.input.workerHost,
      ...this.parent,
    });
  }

  /**
   * Waits, QUEUED, until the team's quota admits the run's next turn. Admission is decided in
   * PostgreSQL (in the order runs were queued), so neither a restart nor a replay lets a run in
   * early; the wait is a signal with a periodic look as its fallback.
   */
  async admitted(resume?: RunWorkflowInput['resume']): Promise<void> {
    if (!this.admission) return;
    for (;;) {
      this.slotMayHaveFreed = false;
      const admission = await this.activities.store.admitRun({ runId: this.input.runId });
      // Absent from results recorded before it was returned.
      if (admission.turn !== undefined) this.knownTurn = admission.turn;
      if (admission.admitted) return;
      await condition(
        () => this.slotMayHaveFreed,
        admission.recheckSeconds ? admission.recheckSeconds * 1000 : ADMISSION_RECHECK,
      );
      await this.continueAsNewIfSuggested(resume);
    }
  }

  /** Starts (or resumes) the turn to work on; null when there is none. */
  async startTurn(): Promise<{ turn: number | null; idleTimeoutMinutes: number }> {
    const started = await this.activities.store.startTurn({ runId: this.input.runId });
    if (started.turn !== null) this.knownTurn = started.turn;
    return started;
  }

  /** The run's turn ended: a slot of its team may have freed. */
  async slotFreed(): Promise<void> {
    if (this.admission) await this.activities.store.wakeWaitingRuns({ runId: this.input.runId });
  }

  /** Waits out the idle window for a follow-up; says whether one came. */
  async followupWithin(idleTimeoutMinutes: number): Promise<boolean> {
    if (idleTimeoutMinutes > 0) showWaitingForFollowups(this.state, idleTimeoutMinutes);
    return idleTimeoutMinutes > 0 ? condition(() => this.followupPending, idleTimeoutMinutes * 60_000) : false;
  }

  /**
   * A call of the step waits for a person, the run BLOCKED: it frees its team slot and gives up
   * its workspace (its files are in its checkpoints; the next provisioning restores them), so a
   * blocked run costs no worker; waits for the decision's signal or the deadline, looking at the
   * approval at least hourly should a signal be lost; then is admitted again and works on.
   */
  private async decided(turn: number, step: number, approval: WaitingApproval): Promise<void> {
    const { store } = this.activities;
    const { runId } = this.input;
    this.setState('BLOCKED');
    await this.slotFreed();
    // The removal forgets the workspace's queue at once (the next provisioning starts afresh) and
    // goes on through a cancel or an interrupt meanwhile.
    if (patched(BLOCKED_RELEASE_PATCH)) void CancellationScope.nonCancellable(() => this.workspace.remove());
    else await this.workspace.remove();
    for (;;) {
      // Reset before the look: a decision signalled during it wakes the wait at once.
      this.approvalMayBeDecided = false;
      const { pending } = await store.approvalPending({ runId, approvalId: approval.approvalId });
      if (!pending) break;
      const untilDeadline = Date.parse(approval.expiresAt) - Date.now();
      const wait = Math.max(APPROVAL_MIN_WAIT_MS, Math.min(untilDeadline, APPROVAL_RECHECK_MS));
      await condition(() => this.approvalMayBeDecided, wait);
    }
    await this.admitted({ turn, step });
    await store.resumeRun({ runId, turn });
    this.setState('INPROGRESS');
  }

  /** The turn's change as a branch and a pull request per cloned repository, on the workspace's worker. */
  private async deliverPullRequests(turn: number): Promise<void> {
    const { runId } = this.input;
    // Workflow time: the same on every retry, so a retried delivery makes the same commit.
    const at = Date.now();
    await this.workspace.run(turn, (queue) =>
      this.activities.deliveryOn(queue).deliverPullRequests({ runId, turn, at }),
    );
  }

  /** Works one turn from INPROGRESS to a terminal state, starting at `firstStep`. */
  async runTurn(turn: number, firstStep: number): Promise<void> {
    const { runId } = this.input;
    const { store, onWorkspace } = this.activities;
    let step = firstStep;
    let to: TerminalRunState = 'SUCCEEDED';
    let statusMessage: RunStatusMessage | undefined;
    let releaseWorkspace: boolean | undefined;
    /** The turn's last step asked for its change to be delivered as pull requests. */
    let deliver = false;
    try {
      // No patch: the scope adds no command, and only an interrupt (a signal of this code) cancels it.
      await CancellationScope.cancellable(async () => {
        this.turnScope = CancellationScope.current();
        await this.workspace.run(turn, async () => undefined);
        for (;;) {
          // Each step first appends the follow-ups recorded so far, so they join at this boundary.
          this.followupPending = false;
          const runStep = () =>
            this.workspace.run(turn, (queue) => onWorkspace(queue).runAgentStep({ runId, turn, step }));
          let outcome = await runStep();
          // A factory agent's dispatch or wait is carried out here, and a call that waits for a
          // person waits here; the step then goes on after it. (No patch: only a step of this
          // code returns `approval`, so histories recorded before it replay as they ran.)
          while (outcome.orchestration || outcome.approval) {
            if (outcome.approval) await this.decided(turn, step, outcome.approval);
            for (const call of outcome.orchestration ?? []) await this.orchestrator.carryOut(turn, step, call);
            outcome = await runStep();
          }
          const { done } = outcome;
          deliver = outcome.deliver === true;
          step += 1;
          // The stored run is past this turn: a workflow task that recorded its end was lost and,
          // replayed with a follow-up's signal beside the last step's result, went on with the turn.
          // It ends as recorded; the next turn is started from what is stored. (No patch: only a
          // step of this code returns `turnEnded`, so histories already in flight replay as before.)
          if (outcome.turnEnded) {
            this.followupPending = true;
            deliver = false;
            break;
          }
          if (done && !this.followupPending) break;
          deliver = false;
          if (workflowInfo().continueAsNewSuggested) {
            await continueAsNew<AgentRunWorkflow>({
              ...this.input,
              workspaceQueue: this.workspace.queue,
              workspaceId: this.workspace.id,
              resume: { turn, step },
            });
          }
        }
        if (deliver && patched(PULL_REQUEST_DELIVERY_PATCH)) await this.deliverPullRequests(turn);
      });
    } catch (err) {
      if (err instanceof ContinueAsNew) throw err;
      if (this.interrupted && !CancellationScope.current().consideredCancelled) {
        // Only this turn was interrupted: whatever its activities ended with (a cancelled one may
        // report the cancel as a failure of its own), the turn ends as the interrupt says.
        statusMessage = { message: INTERRUPTED_MESSAGE };
      } else if (isCancellation(err)) {
        throw err;
      } else {
        ({ to, statusMessage, releaseWorkspace } = classifyFailure(err));
      }
    } finally {
      this.turnScope = undefined;
      this.interrupted = false;
    }
    await store.recordTransition({ runId, turn, state: to, statusMessage });
    this.setState(to);
    await this.slotFreed();
    if (this.input.parentRunId) await tellParent(this.input.parentRunId, { runId, state: to });
    if (releaseWorkspace && patched(DISK_LIMIT_RELEASE_PATCH)) await this.workspace.remove();
  }
}
