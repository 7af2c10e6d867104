import { ApplicationFailure } from '@temporalio/common';
import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';

/**
 * The runs this worker is working on (from provisioning to the end of their turn), and a slot
 * supplier for the provisioning queue that hands out a slot only while there is room for one
 * more: a worker at capacity does not even poll for provisioning, so a new run waits in the
 * queue for a worker with room instead of crowding one that has none. Workspaces that only wait
 * out their idle window do not count; a follow-up to one of them runs where it is.
 */
export class WorkspaceCapacity {
  private reserved = 0;
  private readonly runs = new Set<string>();
  private readonly waiters = new Set<() => void>();

  constructor(readonly capacity: number) {}

  /** Runs worked on, plus provisioning slots handed out. */
  inUse(): number {
    return this.runs.size + this.reserved;
  }

  /**
   * Counts the run as worked on from the start of `work`; it stops counting when `work` says its
   * turn is over, or fails for good (nothing will retry it here).
   */
  async track<T>(runId: string, work: () => Promise<T>, turnOver: (result: T) => boolean = () => false): Promise<T> {
    this.runs.add(runId);
    try {
      const result = await work();
      if (turnOver(result)) this.release(runId);
      return result;
    } catch (err) {
      if (err instanceof ApplicationFailure && err.nonRetryable) this.release(runId);
      throw err;
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
          const cleanup = () => {
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
      markSlotUsed: () => undefined,
      releaseSlot: () => {
        this.reserved = Math.max(0, this.reserved - 1);
        this.wake();
      },
    };
  }
}
