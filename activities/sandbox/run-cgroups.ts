import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

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

/** The directory every run's group is made in, below the worker's own group. */
const RUNS_DIR = 'agent-runs';
const V1_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
const V2_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
/**
 * A shell that writes its own pid into each `cgroup.procs` file given, then becomes the command:
 * the process is in the run's group before it runs anything, so nothing it forks escapes.
 */
const JOIN_SCRIPT =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';

/** argv that joins the run's group (its `procsFiles`) and then runs `file args…`. */
export function joinArgv(procsFiles: string[], file: string, args: string[]): { file: string; args: string[] } {
  return {
    file: '/bin/sh',
    args: ['-c', JOIN_SCRIPT, 'cgroup-join', String(procsFiles.length), ...procsFiles, file, ...args],
  };
}

interface Mount {
  /** The mount's root within its hierarchy (not `/` inside a container with its own cgroup namespace). */
  root: string;
  mountPoint: string;
  type: 'cgroup' | 'cgroup2';
  controllers: string[];
}

function parseMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [type, , superOptions] = right.split(' ');
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    mounts.push({
      root: unescapeMountPath(fields[3]!),
      mountPoint: unescapeMountPath(fields[4]!),
      type,
      controllers: type === 'cgroup' ? (superOptions ?? '').split(',') : [],
    });
  }
  return mounts;
}

/** mountinfo writes spaces and other bytes as octal escapes (`\040`). */
function unescapeMountPath(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** `/proc/self/cgroup`: hierarchy id, its controllers (empty for v2), and this process's path in it. */
function parseSelfCgroup(text: string): { controllers: string[]; path: string }[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, controllers, ...rest] = line.split(':');
      return { controllers: controllers ? controllers.split(',') : [], path: rest.join(':') };
    });
}

/** The directory of this process's group in a mount, as the mount shows it. */
function ownDir(mount: Mount, ownPath: string): string | undefined {
  const relative = path.posix.relative(mount.root, ownPath);
  if (relative.startsWith('..')) return undefined; // the group is outside what this mount shows
  return path.join(mount.mountPoint, relative);
}

async function writeKnob(dir: string, file: string, value: string): Promise<void> {
  await writeFile(path.join(dir, file), value);
}

async function pidsIn(procsFile: string): Promise<number[]> {
  const text = await readFile(procsFile, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

/** SIGKILLs every process of the groups until they are empty (processes may fork meanwhile), then removes them. */
async function killAndRemove(dirs: string[]): Promise<void> {
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

/** Run ids become directory names: only what an id may hold. */
function groupName(runId: string): string {
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(runId) || runId.startsWith('.')) {
    // `.probe` and the like: a name of their own that no run id can take.
    return `_${Buffer.from(runId).toString('hex').slice(0, 60)}`;
  }
  return runId;
}

/** cgroup v1: a group per run in each of the memory, pids and cpu hierarchies. */
class CgroupsV1 implements RunCgroups {
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

  async oomKills(runId: string): Promise<number> {
    const text = await readFile(path.join(this.dirs(runId).memory, 'memory.oom_control'), 'utf8').catch(() => '');
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
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

/** cgroup v2: a group per run below `<worker's group>/agent-runs`, with memory, pids and cpu enabled. */
class CgroupsV2 implements RunCgroups {
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

  async oomKills(runId: string): Promise<number> {
    const text = await readFile(path.join(this.dir(runId), 'memory.events'), 'utf8').catch(() => '');
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
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
 * The run groups this worker can make, or why it cannot. cgroup v2 (a unified hierarchy with
 * the memory, pids and cpu controllers) is used when present: the worker moves the processes of
 * its own group into `<group>/worker` (a group with processes may not enable controllers for its
 * children) and makes the runs' groups in `<group>/agent-runs`. Otherwise cgroup v1, with the
 * memory, pids and cpu hierarchies mounted writable. Each is checked by making a group and
 * removing it again.
 */
export async function detectRunCgroups(
  limits: RunLimits,
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
        const base = await prepareV2(group, host.pid);
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
    if (dir) bases[controller] = path.join(dir, RUNS_DIR);
  }
  const missingV1 = V1_CONTROLLERS.filter((c) => !bases[c]);
  if (missingV1.length === 0) {
    const cgroups = new CgroupsV1(bases as Record<(typeof V1_CONTROLLERS)[number], string>, limits);
    try {
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

/** Makes `<group>/agent-runs` with the controllers enabled, moving the group's processes into `<group>/worker` first. */
async function prepareV2(group: string, pid: number): Promise<string> {
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
  const base = path.join(group, RUNS_DIR);
  await mkdir(base, { recursive: true });
  await writeFile(path.join(base, 'cgroup.subtree_control'), enable);
  return base;
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
