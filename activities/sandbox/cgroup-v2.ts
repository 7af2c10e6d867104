import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  groupName,
  killAndRemove,
  oomKillsIn,
  pidsIn,
  removeLeftoverGroups,
  RUNS_DIR,
  workerRunsDir,
  writeKnob,
  type RunCgroups,
  type RunLimits,
} from './cgroup-common';

export const V2_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;

/** cgroup v2: a group per run below `<worker's group>/agent-runs/<worker id>`, with memory, pids and cpu enabled. */
export class CgroupsV2 implements RunCgroups {
  readonly description: string;

  constructor(
    private readonly base: string,
    private readonly limits: RunLimits,
  ) {
    this.description = `cgroup v2 (memory ${limits.memoryMb} MiB, ${limits.maxProcesses} processes, cpu ${
      limits.cpus ? `${limits.cpus} CPUs` : 'an equal share'
    } per run) under ${base}`;
  }

  private dir(runId: string): string {
    return path.join(this.base, groupName(runId));
  }

  async procsFiles(runId: string): Promise<string[]> {
    const dir = this.dir(runId);
    if (!existsSync(path.join(dir, 'cgroup.procs'))) {
      await mkdir(dir, { recursive: true });
      await writeKnob(dir, 'memory.max', String(this.limits.memoryMb * 1024 * 1024));
      if (existsSync(path.join(dir, 'memory.swap.max'))) await writeKnob(dir, 'memory.swap.max', '0');
      await writeKnob(dir, 'pids.max', String(this.limits.maxProcesses));
      await writeKnob(dir, 'cpu.weight', '100');
      if (this.limits.cpus > 0) await writeKnob(dir, 'cpu.max', `${Math.round(this.limits.cpus * 100_000)} 100000`);
    }
    return [path.join(dir, 'cgroup.procs')];
  }

  oomKills(runId: string): Promise<number> {
    return Promise.resolve(oomKillsIn(path.join(this.dir(runId), 'memory.events')));
  }

  pids(runId: string): Promise<number[]> {
    return pidsIn(path.join(this.dir(runId), 'cgroup.procs'));
  }

  async remove(runId: string): Promise<void> {
    const dir = this.dir(runId);
    // cgroup.kill (Linux 5.14) kills the whole group at once, forks included.
    if (existsSync(path.join(dir, 'cgroup.kill'))) await writeKnob(dir, 'cgroup.kill', '1').catch(() => undefined);
    await killAndRemove([dir]);
  }
}

/**
 * Makes `<group>/agent-runs/<worker id>` with the controllers enabled, moving the group's
 * processes into `<group>/worker` first, and clears what a previous worker of this name left there.
 */
export async function prepareV2(group: string, pid: number, workerId: string): Promise<string> {
  const enable = `+${V2_CONTROLLERS.join(' +')}`;
  const subtree = path.join(group, 'cgroup.subtree_control');
  const enabled = (await readFile(subtree, 'utf8')).split(/\s+/);
  if (!V2_CONTROLLERS.every((c) => enabled.includes(c))) {
    const leaf = path.join(group, 'worker');
    await mkdir(leaf, { recursive: true });
    // Every process of the group (this worker, and whatever runs beside it in a container).
    for (const other of await pidsIn(path.join(group, 'cgroup.procs'))) {
      await writeFile(path.join(leaf, 'cgroup.procs'), String(other)).catch((err: NodeJS.ErrnoException) => {
        if (other === pid || err.code !== 'ESRCH') throw err;
      });
    }
    await writeFile(subtree, enable);
  }
  const base = path.join(group, workerRunsDir(workerId));
  await mkdir(base, { recursive: true });
  // Each level down to the worker's own directory passes the controllers on.
  await writeFile(path.join(group, RUNS_DIR, 'cgroup.subtree_control'), enable);
  await writeFile(path.join(base, 'cgroup.subtree_control'), enable);
  await removeLeftoverGroups([base]);
  return base;
}
