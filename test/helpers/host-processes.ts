import { readdirSync, readFileSync } from 'node:fs';

/**
 * Host pids of live processes whose argv[0] is `name` (start them with `exec -a name ...`).
 * Sandboxed processes have pids of their own namespace, so tests find them from the host by name.
 */
export function hostPidsRunning(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === name) pids.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Whether a host process has exited (it is gone, or a zombie not yet reaped). */
export function hasExited(pid: number): boolean {
  try {
    return /\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
