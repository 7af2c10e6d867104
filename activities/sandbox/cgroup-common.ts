import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What cgroup v1 and v2 share: a run's limits, what its group offers (RunCgroups), the files of a group. */

/** What one run's processes may use together (commands, setup, MCP servers, later harness CLIs). */
export interface RunLimits {
  memoryMb: number;
  maxProcesses: number;
  /** CPUs the run may use at most (0: no cap beyond an equal share with the other runs). */
  cpus: number;
}

/**
 * The cgroup of each run: every process the run starts joins it before it runs (see joinArgv),
 * so memory, process count and CPU are limited for the run as a whole, not per process.
 */
export interface RunCgroups {
  /** Which hierarchy enforces the limits, and where: said at start and in /readyz. */
  readonly description: string;
  /** The `cgroup.procs` files of the run's group, made with its limits on first use. */
  procsFiles(runId: string): Promise<string[]>;
  /** How many of the run's processes the kernel has killed for want of memory. */
  oomKills(runId: string): Promise<number>;
  /** The pids in the run's group now. */
  pids(runId: string): Promise<number[]>;
  /** Kills every process of the run and removes its group. */
  remove(runId: string): Promise<void>;
}

/** The directory every worker's run groups are made in, below the worker's own group. */
export const RUNS_DIR = 'agent-runs';

/**
 * Where one worker makes its runs' groups: `agent-runs/<worker id>`. Workers on one host may share
 * a cgroup (two workers started side by side, or a host cgroup namespace), and a run handed over
 * from one to the other has the same id on both: removing it on the worker that let it go must
 * not kill what the other now runs for it.
 */
export function workerRunsDir(workerId: string): string {
  return path.join(RUNS_DIR, groupName(workerId));
}

/** Kills and removes the groups a previous worker of this name left behind (it was killed before it removed them). */
export async function removeLeftoverGroups(bases: string[]): Promise<void> {
  for (const base of bases) {
    const entries = await readdir(base, { withFileTypes: true }).catch(() => []);
    const groups = entries.filter((e) => e.isDirectory()).map((e) => path.join(base, e.name));
    await killAndRemove(groups);
  }
}

export async function writeKnob(dir: string, file: string, value: string): Promise<void> {
  await writeFile(path.join(dir, file), value);
}

export async function pidsIn(procsFile: string): Promise<number[]> {
  const text = await readFile(procsFile, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

/** SIGKILLs every process of the groups until they are empty (processes may fork meanwhile), then removes them. */
export async function killAndRemove(dirs: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (;;) {
      const pids = await pidsIn(path.join(dir, 'cgroup.procs'));
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      if (Date.now() > deadline) throw new Error(`processes of ${dir} survived SIGKILL for 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The kernel may still be tearing the last process down: rmdir is EBUSY briefly.
    for (;;) {
      try {
        await rmdir(dir);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || Date.now() > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}

/** Run and worker ids become directory names: only what an id may hold. */
export function groupName(id: string): string {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(id) || id.startsWith('.')) {
    // `.probe`, `host:1` and the like: a name of their own that no valid id can take.
    return `_${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;
  }
  return id;
}

/**
 * The `oom_kill` count of a memory group's counters file (0 when there is none). Read at once:
 * the kernel prints the counters without waiting on anything, and every command reads them
 * twice, which through the thread pool cost more than the read.
 */
export function oomKillsIn(countersFile: string): number {
  let text = '';
  try {
    text = readFileSync(countersFile, 'utf8');
  } catch {
    // no group (yet, or any more)
  }
  return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
}
