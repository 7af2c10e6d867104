import { readdirSync, readFileSync } from 'node:fs';

/** A process and every descendant of it (PostgreSQL serves each connection from a child). */
function processTree(pid: number): number[] {
  const pids = [pid];
  for (let i = 0; i < pids.length; i += 1) {
    let children = '';
    try {
      children = readFileSync(`/proc/${pids[i]}/task/${pids[i]}/children`, 'utf8');
    } catch {
      continue;
    }
    pids.push(...children.trim().split(/\s+/).filter(Boolean).map(Number));
  }
  return pids;
}

/** Whether every thread of a process is stopped (or the process is gone). */
function stopped(pid: number): boolean {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return true;
  }
  return tasks.every((task) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      return /^[tTZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
    } catch {
      return true;
    }
  });
}

/**
 * Freezes a server with SIGSTOP (what a hung host or a partition looks like to its clients:
 * connections stay open and nothing answers) until the returned function thaws it.
 */
export function freeze(pid: number): () => void {
  const frozen = processTree(pid);
  let thawed = false;
  const thaw = () => {
    if (thawed) return;
    thawed = true;
    for (const p of frozen) {
      try {
        process.kill(p, 'SIGCONT');
      } catch {
        // gone meanwhile
      }
    }
  };
  for (const p of frozen) process.kill(p, 'SIGSTOP');
  // kill() returns before the threads have stopped: a request sent at once could still be answered.
  const deadline = Date.now() + 5_000;
  while (!frozen.every(stopped)) {
    if (Date.now() > deadline) {
      thaw();
      throw new Error(`${pid} did not stop within 5 s of SIGSTOP`);
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
  }
  return thaw;
}
