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
  const processes = new Map<number, { ppid: number; cmdline: string[] }>();
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
      processes.set(pid, { ppid, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  const roots = [...processes].filter(([, p]) => {
    if (!p.cmdline[0] || path.basename(p.cmdline[0]) !== 'bwrap') return false;
    return p.cmdline.some((arg, i) => arg === '--bind' && matches(p.cmdline[i + 1] ?? ''));
  });
  const doomed = new Set(roots.map(([pid]) => pid));
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
