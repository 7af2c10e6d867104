import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectRunCgroups, joinArgv, type CgroupHost } from '../../activities/sandbox/run-cgroups';

/** The layout and writes of run groups against a copy of /sys/fs/cgroup in a directory (no kernel). */
let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'cgroup-layout-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const limits = { memoryMb: 512, maxProcesses: 64, cpus: 1.5 };
const noProbe = () => Promise.resolve();
const read = (...parts: string[]) => readFileSync(path.join(root, ...parts), 'utf8');

function host(selfCgroup: string, mountinfo: string): CgroupHost {
  return { selfCgroup: async () => selfCgroup, mountinfo: async () => mountinfo, pid: 4242 };
}

test("cgroup v2: the group's processes move to a leaf, controllers are enabled, each run gets its limits", async () => {
  const group = path.join(root, 'unified', 'svc');
  mkdirSync(group, { recursive: true });
  writeFileSync(path.join(group, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  writeFileSync(path.join(group, 'cgroup.subtree_control'), '');
  writeFileSync(path.join(group, 'cgroup.procs'), '4242\n');
  const found = await detectRunCgroups(
    limits,
    'worker-a',
    host('0::/svc\n', `41 31 0:38 / ${path.join(root, 'unified')} rw,relatime - cgroup2 cgroup2 rw\n`),
    noProbe,
  );
  if (!('cgroups' in found)) throw new Error(found.unavailable);
  expect(found.cgroups.description).toMatch(/^cgroup v2 .* under .*svc\/agent-runs\/worker-a$/);
  expect(read('unified/svc/worker/cgroup.procs')).toBe('4242');
  expect(read('unified/svc/cgroup.subtree_control')).toBe('+memory +pids +cpu');
  expect(read('unified/svc/agent-runs/cgroup.subtree_control')).toBe('+memory +pids +cpu');
  expect(read('unified/svc/agent-runs/worker-a/cgroup.subtree_control')).toBe('+memory +pids +cpu');

  const files = await found.cgroups.procsFiles('run-1');
  expect(files).toEqual([path.join(group, 'agent-runs', 'worker-a', 'run-1', 'cgroup.procs')]);
  expect(read('unified/svc/agent-runs/worker-a/run-1/memory.max')).toBe(String(512 * 1024 * 1024));
  expect(read('unified/svc/agent-runs/worker-a/run-1/pids.max')).toBe('64');
  expect(read('unified/svc/agent-runs/worker-a/run-1/cpu.max')).toBe('150000 100000');
  writeFileSync(
    path.join(group, 'agent-runs', 'worker-a', 'run-1', 'memory.events'),
    'low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n',
  );
  expect(await found.cgroups.oomKills('run-1')).toBe(2);
});

test("cgroup v1: a group per run in the memory, pids and cpu hierarchies, below the worker's own", async () => {
  const mounts = ['memory', 'pids', 'cpu,cpuacct'].map(
    (c, i) => `${30 + i} 31 0:${30 + i} / ${path.join(root, c)} rw,relatime - cgroup cgroup rw,${c}`,
  );
  for (const c of ['memory/outer/me', 'pids', 'cpu,cpuacct']) mkdirSync(path.join(root, c), { recursive: true });
  const found = await detectRunCgroups(
    { ...limits, cpus: 0 },
    'worker-a',
    host('4:memory:/outer/me\n3:pids:/\n2:cpu,cpuacct:/\n0::/\n', mounts.join('\n')),
    noProbe,
  );
  if (!('cgroups' in found)) throw new Error(found.unavailable);
  expect(found.cgroups.description).toMatch(/^cgroup v1 .*equal share/);
  const files = await found.cgroups.procsFiles('run-2');
  expect(files).toEqual([
    path.join(root, 'memory/outer/me/agent-runs/worker-a/run-2/cgroup.procs'),
    path.join(root, 'pids/agent-runs/worker-a/run-2/cgroup.procs'),
    path.join(root, 'cpu,cpuacct/agent-runs/worker-a/run-2/cgroup.procs'),
  ]);
  expect(read('memory/outer/me/agent-runs/worker-a/run-2/memory.limit_in_bytes')).toBe(String(512 * 1024 * 1024));
  expect(read('pids/agent-runs/worker-a/run-2/pids.max')).toBe('64');
  expect(read('cpu,cpuacct/agent-runs/worker-a/run-2/cpu.shares')).toBe('1024');
});

test('no usable hierarchy is said plainly', async () => {
  const found = await detectRunCgroups(limits, 'worker-a', host('0::/\n', ''), noProbe);
  expect(found).toEqual({
    unavailable: expect.stringContaining('no cgroup v1 hierarchy mounted for memory, pids, cpu'),
  });
});

test('joining is a shell that writes its own pid to each group, then becomes the command', () => {
  expect(joinArgv(['/a/cgroup.procs', '/b/cgroup.procs'], 'setpriv', ['--reuid', '1', 'bwrap'])).toEqual({
    file: '/bin/sh',
    args: [
      '-c',
      expect.stringContaining('exec "$@"'),
      'cgroup-join',
      '2',
      '/a/cgroup.procs',
      '/b/cgroup.procs',
      'setpriv',
      '--reuid',
      '1',
      'bwrap',
    ],
  });
});
