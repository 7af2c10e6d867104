import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcessStat {
  pid: number;
  parent: number;
  command: string;
  cpuMs: number;
  /** Of its children that exited and that it waited for (with theirs): `cutime` + `cstime`. */
  exitedChildrenCpuMs: number;
}

function readStat(pid: number): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const command = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    const ms = (ticks: number) => (ticks / TICKS_PER_SECOND) * 1000;
    return {
      pid,
      parent: Number(fields[1]),
      command,
      cpuMs: ms(Number(fields[11]) + Number(fields[12])), // utime, stime
      exitedChildrenCpuMs: ms(Number(fields[13]) + Number(fields[14])), // cutime, cstime
    };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** Where `descendantCpuMs` counts the processes that have exited (sandboxes, git, bash, …). */
export const EXITED = 'exited processes';

/**
 * CPU time (ms) of this process's descendants, grouped by command name (`postgres`,
 * `temporal`, …): where a benchmark's work went besides this process. The processes that have
 * exited meanwhile, this one's children included, count under EXITED: each was waited for by a
 * process of the tree, which the kernel credits with their time. Linux only; on other systems,
 * empty.
 */
export function descendantCpuMs(): Map<string, number> {
  const byCommand = new Map<string, number>();
  if (os.platform() !== 'linux') return byCommand;
  const stats = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((s): s is ProcessStat => s !== undefined);
  const children = new Map<number, ProcessStat[]>();
  for (const s of stats) children.set(s.parent, [...(children.get(s.parent) ?? []), s]);
  const add = (command: string, ms: number) => byCommand.set(command, (byCommand.get(command) ?? 0) + ms);
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      add(child.command, child.cpuMs);
      add(EXITED, child.exitedChildrenCpuMs);
      walk(child.pid);
    }
  };
  add(EXITED, readStat(process.pid)?.exitedChildrenCpuMs ?? 0);
  walk(process.pid);
  return byCommand;
}

/** `after - before`, per command. */
export function cpuSince(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([command, ms]) => [command, ms - (before.get(command) ?? 0)]));
}

/**
 * CPU time (ms) the whole machine has spent busy since boot, on every core: every process's and
 * the kernel's (a network namespace's teardown runs in a kernel thread, for instance). On a
 * machine that runs nothing else, the honest total of what a benchmark's work cost. Linux only;
 * elsewhere 0.
 */
export function machineBusyMs(): number {
  if (os.platform() !== 'linux') return 0;
  // "cpu  user nice system idle iowait irq softirq steal …", in USER_HZ ticks.
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) / TICKS_PER_SECOND) * 1000;
}

/**
 * CPU time (ms) of this process (as `ownLabel`) and every process it started, by command, and of
 * the whole machine, while `work` runs.
 */
export async function cpuOf(
  ownLabel: string,
  work: () => Promise<void>,
): Promise<{ total: number; byCommand: Map<string, number>; machine: number }> {
  const own = process.cpuUsage();
  const before = descendantCpuMs();
  const machineBefore = machineBusyMs();
  await work();
  const used = process.cpuUsage(own);
  const byCommand = cpuSince(before, descendantCpuMs());
  byCommand.set(ownLabel, (used.user + used.system) / 1000);
  return {
    total: [...byCommand.values()].reduce((a, b) => a + b, 0),
    byCommand,
    machine: machineBusyMs() - machineBefore,
  };
}
