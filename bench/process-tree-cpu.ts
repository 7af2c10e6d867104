import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcessStat {
  pid: number;
  parent: number;
  command: string;
  cpuMs: number;
}

function readStat(pid: number): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const command = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
    return { pid, parent: Number(fields[1]), command, cpuMs: (ticks / TICKS_PER_SECOND) * 1000 };
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * CPU time (ms) of this process's descendants, grouped by command name (`postgres`,
 * `temporal`, …): where a benchmark's work went besides this process. Linux only; on other
 * systems, empty.
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
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      byCommand.set(child.command, (byCommand.get(child.command) ?? 0) + child.cpuMs);
      walk(child.pid);
    }
  };
  walk(process.pid);
  return byCommand;
}

/** `after - before`, per command. */
export function cpuSince(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([command, ms]) => [command, ms - (before.get(command) ?? 0)]));
}
