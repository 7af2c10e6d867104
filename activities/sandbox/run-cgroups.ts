import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { groupName, removeLeftoverGroups, workerRunsDir, type RunCgroups, type RunLimits } from './cgroup-common';
import { joinArgv } from './cgroup-join';
import { ownDir, parseMounts, parseSelfCgroup, type Mount } from './cgroup-mounts';
import { CgroupsV1, V1_CONTROLLERS } from './cgroup-v1';
import { CgroupsV2, prepareV2, V2_CONTROLLERS } from './cgroup-v2';

export type { RunCgroups, RunLimits } from './cgroup-common';
export { joinArgv } from './cgroup-join';

/** The paths of /proc and /sys this module reads: the real ones, or a test's copies. */
export interface CgroupHost {
  /** Contents of /proc/self/cgroup. */
  selfCgroup(): Promise<string>;
  /** Contents of /proc/self/mountinfo. */
  mountinfo(): Promise<string>;
  pid: number;
}

export const REAL_HOST: CgroupHost = {
  selfCgroup: () => readFile('/proc/self/cgroup', 'utf8'),
  mountinfo: () => readFile('/proc/self/mountinfo', 'utf8'),
  pid: process.pid,
};

/**
 * The run groups this worker can make, or why it cannot. cgroup v2 (a unified hierarchy with
 * the memory, pids and cpu controllers) is used when present: the worker moves the processes of
 * its own group into `<group>/worker` (a group with processes may not enable controllers for its
 * children) and makes the runs' groups in `<group>/agent-runs/<worker id>`. Otherwise cgroup v1, with the
 * memory, pids and cpu hierarchies mounted writable. Each is checked by making a group and
 * removing it again.
 */
export async function detectRunCgroups(
  limits: RunLimits,
  workerId: string,
  host: CgroupHost = REAL_HOST,
  check: (cgroups: RunCgroups) => Promise<void> = probe,
): Promise<{ cgroups: RunCgroups } | { unavailable: string }> {
  let mounts: Mount[];
  let own: { controllers: string[]; path: string }[];
  try {
    mounts = parseMounts(await host.mountinfo());
    own = parseSelfCgroup(await host.selfCgroup());
  } catch (err) {
    return { unavailable: `cannot read /proc/self/cgroup or /proc/self/mountinfo (${(err as Error).message})` };
  }
  const problems: string[] = [];

  const unified = mounts.find((m) => m.type === 'cgroup2');
  const v2Path = own.find((o) => o.controllers.length === 0)?.path;
  if (unified && v2Path !== undefined) {
    const group = ownDir(unified, v2Path);
    const available = group
      ? (await readFile(path.join(group, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/)
      : [];
    const missing = V2_CONTROLLERS.filter((c) => !available.includes(c));
    if (group && missing.length === 0) {
      try {
        const base = await prepareV2(group, host.pid, workerId);
        const cgroups = new CgroupsV2(base, limits);
        await check(cgroups);
        return { cgroups };
      } catch (err) {
        problems.push(`cgroup v2 at ${group}: ${(err as Error).message}`);
      }
    } else if (group) {
      problems.push(`cgroup v2 at ${group} lacks the ${missing.join(', ')} controller(s)`);
    }
  }

  const bases: Partial<Record<(typeof V1_CONTROLLERS)[number], string>> = {};
  for (const controller of V1_CONTROLLERS) {
    const mount = mounts.find((m) => m.type === 'cgroup' && m.controllers.includes(controller));
    const ownPath = own.find((o) => o.controllers.includes(controller))?.path;
    const dir = mount && ownPath !== undefined ? ownDir(mount, ownPath) : undefined;
    if (dir) bases[controller] = path.join(dir, workerRunsDir(workerId));
  }
  const missingV1 = V1_CONTROLLERS.filter((c) => !bases[c]);
  if (missingV1.length === 0) {
    const found = bases as Record<(typeof V1_CONTROLLERS)[number], string>;
    const cgroups = new CgroupsV1(found, limits);
    try {
      await removeLeftoverGroups([found.pids, found.memory, found.cpu]);
      await check(cgroups);
      return { cgroups };
    } catch (err) {
      problems.push(`cgroup v1: ${(err as Error).message}`);
    }
  } else if (!unified) {
    problems.push(`no cgroup v1 hierarchy mounted for ${missingV1.join(', ')}`);
  }
  return { unavailable: problems.join('; ') || 'no cgroup hierarchy found' };
}

/** Makes a group with its limits, has a shell join it, and removes it: proof that runs' groups will work. */
async function probe(cgroups: RunCgroups): Promise<void> {
  // Several workers (or test files) may probe at once on one host.
  const runId = `.cgroup-probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    const files = await cgroups.procsFiles(runId);
    const { execFile } = await import('node:child_process');
    const join = joinArgv(files, '/bin/sh', ['-c', 'cat /proc/self/cgroup']);
    const out = await new Promise<string>((resolve, reject) =>
      execFile(join.file, join.args, (err, stdout, stderr) =>
        err ? reject(new Error(stderr || err.message)) : resolve(stdout),
      ),
    );
    if (!out.includes(groupName(runId))) throw new Error(`a process that joined is not in the group: ${out.trim()}`);
  } finally {
    await cgroups.remove(runId).catch(() => undefined);
  }
}
