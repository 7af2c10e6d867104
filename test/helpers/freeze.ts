import { readFileSync } from 'node:fs';

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

/**
 * Freezes a server with SIGSTOP (what a hung host or a partition looks like to its clients:
 * connections stay open and nothing answers) until the returned function thaws it.
 */
export function freeze(pid: number): () => void {
  const frozen = processTree(pid);
  for (const p of frozen) process.kill(p, 'SIGSTOP');
  let thawed = false;
  return () => {
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
}
