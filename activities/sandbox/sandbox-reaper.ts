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

/**
 * The `--bind` sources of each bubblewrap process seen, by pid and start time (a process's
 * command line never changes, and a pid taken again has another start time): a run's removal
 * reads the command lines of the sandboxes started since the last one, not of every sandbox on
 * the host, which made a burst of runs quadratic.
 */
const bindSourcesOf = new Map<string, string[]>();

async function killSandboxesMounting(matches: (bindSource: string) => boolean): Promise<number[]> {
  const processes = new Map<number, { ppid: number; comm: string; started: string }>();
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
    // Fields from the state on: state, ppid, ... starttime (field 22 of the whole line).
    const fields = stat.slice(commEnd + 2).split(' ');
    // A zombie can do nothing any more, and only its parent can make it go: waiting for it could
    // take as long as that parent does.
    if (fields[0] === 'Z' || fields[0] === 'X') continue;
    processes.set(pid, {
      comm: stat.slice(stat.indexOf('(') + 1, commEnd),
      ppid: Number(fields[1]),
      started: fields[19] ?? '',
    });
  }
  const roots: number[] = [];
  const seen = new Set<string>();
  for (const [pid, p] of processes) {
    if (p.comm !== 'bwrap') continue;
    const key = `${pid}:${p.started}`;
    seen.add(key);
    let sources = bindSourcesOf.get(key);
    if (!sources) {
      // `cmdline` waits on the process's memory map, so it is read through the thread pool, and only for bubblewrap.
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
      // Empty until bubblewrap has exec'd: read again next time.
      if (!cmdline[0]) continue;
      sources =
        path.basename(cmdline[0]) === 'bwrap'
          ? cmdline.flatMap((arg, i) => (arg === '--bind' && cmdline[i + 1] !== undefined ? [cmdline[i + 1]!] : []))
          : [];
      bindSourcesOf.set(key, sources);
    }
    if (sources.some(matches)) roots.push(pid);
  }
  for (const key of bindSourcesOf.keys()) if (!seen.has(key)) bindSourcesOf.delete(key);
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
