import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import { RunFailureType, searchAttributes, workspaceQueueFor, type RunWorkflowInput } from '../run-contract';
import type { RunActivityProxies } from './activity-proxies';

/** How often one step may lose its workspace worker before the run ends ERROR. */
const MAX_REPROVISIONS = 3;
const DEFAULT_LEASE_SECONDS = 60;

/** The workspace worker's lease lapsed while a task waited for it. */
class WorkspaceWorkerGone extends Error {
  override name = 'WorkspaceWorkerGone';
}

/**
 * The run's workspace as its workflow knows it: which worker's queue holds it (and its id),
 * how work reaches it, and how it is given up when that worker is gone.
 */
export class RunWorkspace {
  queue: string | undefined;
  id: string | undefined;
  /** The workspace last given up (remove()): its removal may still be on its way, so it is never kept. */
  private discarded: string | undefined;
  private readonly leaseSeconds: number;

  constructor(
    private readonly input: RunWorkflowInput,
    private readonly activities: RunActivityProxies,
    private readonly leased: boolean,
  ) {
    this.queue = input.workspaceQueue;
    this.id = input.workspaceId;
    this.leaseSeconds = input.settings.workerLeaseSeconds ?? DEFAULT_LEASE_SECONDS;
  }

  /** Runs `work` on the workspace worker, provisioning a workspace first (again, if its worker is gone). */
  async run<T>(turn: number, work: (queue: string) => Promise<T>): Promise<T> {
    const { runId } = this.input;
    const { provisioning, onWorkspace } = this.activities;
    let reason: string | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        if (!this.queue) {
          const pinned = this.input.workerHost && workspaceQueueFor(workflowInfo().taskQueue, this.input.workerHost);
          const request = { runId, turn, reason, ...(this.discarded ? { discarded: this.discarded } : {}) };
          // A pinned run is provisioned on its worker's own queue, waiting there while the worker
          // lives (it may be full), and nowhere else.
          const provisioned = pinned
            ? await this.whileWorkerLives(pinned, () => onWorkspace(pinned).provisionEnvironment(request))
            : await provisioning.provisionEnvironment(request);
          this.queue = provisioned.workspaceQueue;
          if (this.leased) this.id = provisioned.workspaceId;
          const queue = this.queue;
          const { name } = await this.whileWorkerLives(queue, () =>
            onWorkspace(queue).resolveSkillsAndMcpServers({ runId, turn }),
          );
          if (name) upsertSearchAttributes([{ key: searchAttributes.name, value: name }]);
        }
        const queue = this.queue;
        return await this.whileWorkerLives(queue, () => work(queue));
      } catch (err) {
        if (!(isWorkspaceLost(err) || err instanceof WorkspaceWorkerGone) || attempt >= MAX_REPROVISIONS) throw err;
        reason = `The worker that held the workspace (${this.queue}) is gone: provisioning a new workspace elsewhere.`;
        // Should that worker come back, it removes the abandoned workspace (and only that one).
        void this.activities.removeWorkspaceOn(runId, this.queue!, '1 hour', this.id);
        this.queue = undefined;
        this.id = undefined;
      }
    }
  }

  /**
   * Runs `work` (one activity on a workspace queue). When its task waits past the
   * schedule-to-start timeout, the queue's worker is asked about by its lease: a worker that is
   * only busy renews it, and the task is simply scheduled again; one that is gone does not, and
   * its workspace is given up. Costs history only when a task actually waited.
   */
  private async whileWorkerLives<T>(queue: string, work: () => Promise<T>): Promise<T> {
    if (!this.leased) return work();
    for (;;) {
      try {
        return await work();
      } catch (err) {
        if (!isScheduleToStartTimeout(err)) throw err;
        const { alive } = await this.activities.store.isWorkspaceWorkerAlive({
          workspaceQueue: queue,
          leaseSeconds: this.leaseSeconds,
        });
        if (!alive) throw new WorkspaceWorkerGone(`the worker of ${queue} stopped renewing its lease`);
      }
    }
  }

  /** Removes the workspace, if the run has one. */
  async remove(): Promise<void> {
    if (!this.queue) return;
    const queue = this.queue;
    const id = this.id;
    this.queue = undefined;
    this.id = undefined;
    this.discarded = id;
    // A live worker may be slow to get to it; a dead one's workspace went with it.
    await this.activities.removeWorkspaceOn(
      this.input.runId,
      queue,
      this.leased ? `${this.leaseSeconds * 2}s` : `${this.input.settings.workspaceScheduleToStartSeconds}s`,
      id,
    );
  }
}

function isScheduleToStartTimeout(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

function isWorkspaceLost(err: unknown): boolean {
  if (isScheduleToStartTimeout(err)) return true;
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === RunFailureType.WORKSPACE_LOST
  );
}
