import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  groupName,
  killAndRemove,
  oomKillsIn,
  pidsIn,
  writeKnob,
  type RunCgroups,
  type RunLimits,
} from './cgroup-common';

export const V1_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;

/** cgroup v1: a group per run in each of the memory, pids and cpu hierarchies. */
export class CgroupsV1 implements RunCgroups {
  readonly description: string;

  constructor(
    private readonly bases: Record<(typeof V1_CONTROLLERS)[number], string>,
    private readonly limits: RunLimits,
  ) {
    this.description = `cgroup v1 (memory ${limits.memoryMb} MiB, ${limits.maxProcesses} processes, cpu ${
      limits.cpus ? `${limits.cpus} CPUs` : 'an equal share'
    } per run) under ${bases.memory}`;
  }

  private dirs(runId: string): Record<(typeof V1_CONTROLLERS)[number], string> {
    const name = groupName(runId);
    return {
      memory: path.join(this.bases.memory, name),
      pids: path.join(this.bases.pids, name),
      cpu: path.join(this.bases.cpu, name),
    };
  }

  async procsFiles(runId: string): Promise<string[]> {
    const dirs = this.dirs(runId);
    if (!existsSync(path.join(dirs.memory, 'cgroup.procs'))) {
      for (const dir of Object.values(dirs)) await mkdir(dir, { recursive: true });
      const bytes = String(this.limits.memoryMb * 1024 * 1024);
      await writeKnob(dirs.memory, 'memory.limit_in_bytes', bytes);
      // Swap counts too where the kernel accounts it (memsw), so that a run cannot page out past its limit.
      if (existsSync(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'))) {
        await writeKnob(dirs.memory, 'memory.memsw.limit_in_bytes', bytes);
      }
      await writeKnob(dirs.pids, 'pids.max', String(this.limits.maxProcesses));
      await writeKnob(dirs.cpu, 'cpu.shares', '1024');
      if (this.limits.cpus > 0) {
        await writeKnob(dirs.cpu, 'cpu.cfs_period_us', '100000');
        await writeKnob(dirs.cpu, 'cpu.cfs_quota_us', String(Math.round(this.limits.cpus * 100_000)));
      }
    }
    return [dirs.memory, dirs.pids, dirs.cpu].map((dir) => path.join(dir, 'cgroup.procs'));
  }

  oomKills(runId: string): Promise<number> {
    return Promise.resolve(oomKillsIn(path.join(this.dirs(runId).memory, 'memory.oom_control')));
  }

  pids(runId: string): Promise<number[]> {
    return pidsIn(path.join(this.dirs(runId).pids, 'cgroup.procs'));
  }

  async remove(runId: string): Promise<void> {
    const dirs = this.dirs(runId);
    // The pids hierarchy first: it holds every process, whichever hierarchy a process joined first.
    await killAndRemove([dirs.pids, dirs.memory, dirs.cpu]);
  }
}
