import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Finds sandboxes that a previous worker on this workspace directory left running (bubblewrap
 * processes that mount one of its workspaces) and kills them with everything below them.
 * `--die-with-parent` normally takes care of this; this covers what it cannot (a worker killed
 * between fork and the sandbox's own setup, a host without that prctl).
 */
export function killLeftoverSandboxes(workspaceRoot: string): Promise<number[]> {
  const prefix = path.resolve(workspaceRoot) + path.sep;
  return killSandboxesMounting((source) => source.startsWith(prefix));
}

/** Kills every sandbox of one run (those that mount its workspace) and waits until they are gone. */
export async function killRunSandboxes(workspace: string): Promise<number[]> {
  const exact = path.resolve(workspace);
  const killed = await killSandboxesMounting((source) => source === exact);
  const deadline = Date.now() + 10_000;
  while (killed.some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return killed;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function killSandboxesMounting(matches: (bindSource: string) => boolean): Promise<number[]> {
  const processes = new Map<number, { ppid: number; comm: string }>();
  const entries = await readdir('/proc').catch(() => [] as string[]);
  for (const [index, entry] of entries.entries()) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    // Read at once: procfs makes `stat` from the task without waiting on it, and a process table
    // costs a few milliseconds this way, against 80 through the thread pool. In slices, so that
    // the event loop is never held for long.
    if (index % 64 === 63) await new Promise(setImmediate);
    const stat = readProcFile(pid, 'stat');
    if (stat === undefined) continue;
    const commEnd = stat.lastIndexOf(')');
    processes.set(pid, {
      comm: stat.slice(stat.indexOf('(') + 1, commEnd),
      ppid: Number(stat.slice(commEnd + 2).split(' ')[1]),
    });
  }
  const roots: number[] = [];
  for (const [pid, p] of processes) {
    if (p.comm !== 'bwrap') continue;
    // `cmdline` waits on the process's memory map, so it is read through the thread pool, and only for bubblewrap.
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!cmdline[0] || path.basename(cmdline[0]) !== 'bwrap') continue;
    if (cmdline.some((arg, i) => arg === '--bind' && matches(cmdline[i + 1] ?? ''))) roots.push(pid);
  }
  const doomed = new Set(roots);
  // Everything below a leftover sandbox goes with it.
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, p] of processes) {
      if (!doomed.has(pid) && doomed.has(p.ppid)) {
        doomed.add(pid);
        grew = true;
      }
    }
  }
  for (const pid of doomed) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return [...doomed];
}

function readProcFile(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return undefined; // gone meanwhile
  }
}
