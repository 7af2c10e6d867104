import { ApplicationFailure } from '@temporalio/common';
import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';

/**
 * A run between two of its activities (the workflow deciding the next step) still counts for
 * this long; one whose turn ended some other way (cancelled, failed, moved to another worker)
 * stops counting after it, so nothing can hold a place for good.
 */
const BETWEEN_STEPS_MS = 30_000;

/**
 * The runs this worker is working on (from provisioning to the end of their turn), and a slot
 * supplier for the provisioning queue that hands out a slot only while there is room for one
 * more: a worker at capacity does not even poll for provisioning, so a new run waits in the
 * queue for a worker with room instead of crowding one that has none. Workspaces that only wait
 * out their idle window do not count; a follow-up to one of them runs where it is.
 */
export class WorkspaceCapacity {
  private reserved = 0;
  /** Of the reserved provisioning slots, those a task is using (not a poller waiting for one). */
  private used = 0;
  /** Per run: activities in flight here, and when the last one ended. */
  private readonly runs = new Map<string, { inFlight: number; lastEnded: number }>();
  private readonly waiters = new Set<() => void>();

  constructor(readonly capacity: number) {}

  /** Runs worked on, plus provisioning slots handed out. */
  inUse(): number {
    const now = Date.now();
    for (const [runId, run] of this.runs) {
      if (run.inFlight === 0 && now - run.lastEnded > BETWEEN_STEPS_MS) this.runs.delete(runId);
    }
    return this.runs.size + this.reserved;
  }

  /** Runs worked on, plus provisioning slots a task is using (not those a poller only holds). */
  occupied(): number {
    return this.inUse() - this.reserved + this.used;
  }

  /**
   * Counts the run as worked on from the start of `work`; it stops counting when `work` says its
   * turn is over, or fails for good (nothing will retry it here).
   */
  async track<T>(runId: string, work: () => Promise<T>, turnOver: (result: T) => boolean = () => false): Promise<T> {
    const run = this.runs.get(runId) ?? { inFlight: 0, lastEnded: Date.now() };
    this.runs.set(runId, run);
    run.inFlight += 1;
    let over = false;
    try {
      const result = await work();
      over = turnOver(result);
      return result;
    } catch (err) {
      over = err instanceof ApplicationFailure && err.nonRetryable === true;
      throw err;
    } finally {
      run.inFlight -= 1;
      run.lastEnded = Date.now();
      if (over && run.inFlight === 0) this.release(runId);
      else this.wake();
    }
  }

  /** Resolves once there is room for one more run; heartbeats meanwhile, and throws if cancelled. */
  async waitForRoom(ctx: { heartbeat(): void; cancelled: Promise<never> }): Promise<void> {
    while (!this.hasRoomForPinned()) {
      ctx.heartbeat();
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      this.waiters.add(wake);
      const timer = setTimeout(wake, 1000); // places also free up with time (BETWEEN_STEPS_MS)
      try {
        await Promise.race([woken, ctx.cancelled]);
      } finally {
        clearTimeout(timer);
        this.waiters.delete(wake);
      }
    }
  }

  /** The run's turn is over here (or its workspace is gone). */
  release(runId: string): void {
    if (this.runs.delete(runId)) this.wake();
  }

  private wake(): void {
    for (const attempt of [...this.waiters]) attempt();
  }

  private hasRoom(): boolean {
    return this.inUse() < this.capacity;
  }

  /** Room for a run pinned here: the provisioning poller's idle reservation does not count. */
  private hasRoomForPinned(): boolean {
    return this.occupied() < this.capacity;
  }

  slotSupplier(): CustomSlotSupplier<ActivitySlotInfo> {
    return {
      type: 'custom',
      reserveSlot: (_ctx, abortSignal) =>
        new Promise<SlotPermit>((resolve, reject) => {
          const attempt = () => {
            if (abortSignal.aborted) {
              cleanup();
              reject(abortSignal.reason); // what the SDK expects of an abandoned reservation
            } else if (this.hasRoom()) {
              cleanup();
              this.reserved += 1;
              resolve({});
            }
          };
          // Places also free up as runs stop counting with time: look again now and then.
          const timer = setInterval(attempt, 1000);
          const cleanup = () => {
            clearInterval(timer);
            this.waiters.delete(attempt);
            abortSignal.removeEventListener('abort', attempt);
          };
          this.waiters.add(attempt);
          abortSignal.addEventListener('abort', attempt);
          attempt();
        }),
      tryReserveSlot: () => {
        if (!this.hasRoom()) return null;
        this.reserved += 1;
        return {};
      },
      markSlotUsed: () => {
        this.used += 1;
      },
      releaseSlot: (ctx) => {
        if (ctx.slotInfo) this.used = Math.max(0, this.used - 1);
        this.reserved = Math.max(0, this.reserved - 1);
        this.wake();
      },
    };
  }
}
