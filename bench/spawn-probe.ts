import { ChildProcess } from 'node:child_process';

/**
 * Counts the processes this process starts and how long each start blocks its event loop:
 * Node starts a child by forking synchronously on the main thread, and a fork copies the page
 * tables of the whole process, so its cost grows with the process's resident memory.
 */
export function probeSpawns(): { read(): { spawns: number; blockedMs: number[] }; reset(): void } {
  // Every spawn, execFile and fork goes through it; not in the type declarations.
  const proto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown };
  const original = proto.spawn;
  let spawns = 0;
  let blockedMs: number[] = [];
  proto.spawn = function timedSpawn(this: ChildProcess, ...args: unknown[]) {
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      spawns += 1;
      blockedMs.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  return {
    read: () => ({ spawns, blockedMs: [...blockedMs] }),
    reset: () => {
      spawns = 0;
      blockedMs = [];
    },
  };
}
