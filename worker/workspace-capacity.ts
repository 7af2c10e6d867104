import { readdirSync } from 'node:fs';
import type { CustomSlotSupplier, SlotPermit, ActivitySlotInfo } from '@temporalio/worker';

/**
 * How many runs' workspaces this worker holds, and a slot supplier for the provisioning queue
 * that hands out a slot only while there is room for one more: a worker at capacity does not
 * even poll for provisioning, so a new run waits in the queue for a worker with room instead of
 * crowding one that has none.
 */
export class WorkspaceCapacity {
  private reserved = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly workspaceRoot: string,
    readonly capacity: number,
  ) {}

  /** Workspaces on disk (one directory per run; dot-directories are the worker's own). */
  held(): number {
    try {
      return readdirSync(this.workspaceRoot, { withFileTypes: true }).filter(
        (e) => e.isDirectory() && !e.name.startsWith('.'),
      ).length;
    } catch {
      return 0;
    }
  }

  /** Call when a workspace goes, so a waiting reservation looks again. */
  changed(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private hasRoom(): boolean {
    return this.held() + this.reserved < this.capacity;
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
          // Workspaces also go without telling us (an operator, a crash): look again now and then.
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
      markSlotUsed: () => undefined,
      releaseSlot: () => {
        this.reserved = Math.max(0, this.reserved - 1);
        this.changed();
      },
    };
  }
}
