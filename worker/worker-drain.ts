import { ApplicationFailure } from '@temporalio/activity';
import { setTimeout as sleep } from 'node:timers/promises';
import { drainHandovers, workerDraining } from '../core/metrics';
import { RunFailureType } from '../workflows/run-contract';

/**
 * How long a drained worker goes on answering its queue after its last step ended or its last
 * refusal: a run's next step comes a moment after its step ends, and is refused here (handed
 * over at once) rather than left waiting on a queue nobody polls.
 */
const QUIET_MS = 5_000;

/**
 * A worker's drain (SIGTERM: a deploy, a scale-down, a node drain): from its start the worker
 * takes no new work and refuses its runs' next steps, so that each goes on at once on another
 * worker from its checkpoint, while the steps already running finish.
 */
export class WorkerDrain {
  private startedAt: number | undefined;
  private running = 0;
  private lastActivity = Date.now();

  get draining(): boolean {
    return this.startedAt !== undefined;
  }

  /** Runs `work`, a step or other work on one of this worker's runs, counted as in flight. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.running++;
    try {
      return await work();
    } finally {
      this.running--;
      this.lastActivity = Date.now();
    }
  }

  /**
   * Starts the drain; resolves once no tracked work has run and nothing was refused for a few
   * seconds ('idle'), or after `deadlineMs` ('deadline').
   */
  async settled(deadlineMs: number, quietMs = QUIET_MS): Promise<'idle' | 'deadline'> {
    this.startedAt ??= Date.now();
    workerDraining.set(1);
    const deadline = this.startedAt + deadlineMs;
    for (;;) {
      const now = Date.now();
      if (this.running === 0 && now - this.lastActivity >= quietMs) return 'idle';
      if (now >= deadline) return 'deadline';
      await sleep(Math.min(250, deadline - now));
    }
  }

  /** What a draining worker answers a run's next step: its workspace is to be made again elsewhere. */
  refusal(workerId: string): ApplicationFailure {
    drainHandovers.inc();
    this.lastActivity = Date.now();
    return ApplicationFailure.nonRetryable(
      `Worker ${workerId} is draining (a deploy or scale-down): the run goes on on another worker from its latest checkpoint.`,
      RunFailureType.WORKSPACE_LOST,
    );
  }
}
