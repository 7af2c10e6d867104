import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';

/**
 * How many runs this worker is working on (a step, or resolving skills and MCP servers, in
 * flight), and a slot supplier for the provisioning queue that hands out a slot only while there
 * is room for one more: a worker at capacity does not even poll for provisioning, so a new run
 * waits in the queue for a worker with room instead of crowding one that has none. Workspaces
 * that only wait out their idle window do not count; a follow-up to one of them runs where it is.
 */
export class WorkspaceCapacity {
  private reserved = 0;
  private active = 0;
  private readonly waiters = new Set<() => void>();

  constructor(readonly capacity: number) {}

  /** Runs currently worked on, provisioning included. */
  inUse(): number {
    return this.active + this.reserved;
  }

  /** Counts `work` as a run being worked on while it lasts. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.active += 1;
    try {
      return await work();
    } finally {
      this.active -= 1;
      this.wake();
    }
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
