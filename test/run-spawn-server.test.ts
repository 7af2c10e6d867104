import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Sandbox } from '../activities/sandbox/sandbox';
import { runProcesses } from '../activities/sandbox/sandboxed-process';
import type { Config } from '../core/config';
import { hasExited, hostPidsRunning } from './helpers/host-processes';
import { createTestSandbox, sleepingCommand } from './helpers/sandbox';
import { uniqueName, waitFor } from './helpers/test-context';

/**
 * Each run's sandboxes start from a spawn server of the run's own on the host side, which joined
 * the run's cgroup and took the sandbox's host uid once. A sandbox started so must be exactly
 * where one that joined and dropped privileges itself would be.
 */

let sandbox: Sandbox;
let config: Config;

beforeAll(async () => {
  ({ sandbox, config } = await createTestSandbox());
});

const status = (pid: number, field: string) =>
  new RegExp(`^${field}:[ \\t]*(.*)$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
const parentOf = (pid: number) => Number(status(pid, 'PPid'));
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
const cgroups = (pid: number) => readFileSync(`/proc/${pid}/cgroup`, 'utf8');
/** The outermost bwrap above a sandboxed process (past sandbox-init, its first program). */
function sandboxOf(pid: number): number {
  let at = parentOf(pid);
  while (cmdline(at)[0] === '/run/agent-runs/init') at = parentOf(at);
  while (cmdline(parentOf(at))[0]!.endsWith('bwrap')) at = parentOf(at);
  expect(cmdline(at)[0]).toMatch(/bwrap$/);
  return at;
}
/** A run's group as /proc/<pid>/cgroup names it: in this worker's directory of run groups. */
const runGroup = (runId: string) => `/agent-runs/${config.worker.id}/${runId}\n`;
/** Who started a sandboxed process's sandbox. */
const starterOf = (pid: number) => parentOf(sandboxOf(pid));

const running = (runId: string, marker: string) => sleepingCommand(runProcesses(sandbox, runId), marker, 'open');

test("a command's sandbox is started by the run's own spawn server: in the run's cgroup, as the sandbox uid, without new privileges", async () => {
  await sandbox.prepareRun('served-run');
  const marker = uniqueName('served');
  const { pid, command } = await running('served-run', marker);
  const server = starterOf(pid);
  expect(cmdline(server)).toEqual([expect.stringMatching(/\/sandbox-init$/), '-spawn-server']);
  // Not the worker's own spawn server: that one is root's, and in no run's group.
  expect(status(server, 'Uid').split(/\s+/)).toEqual(Array(4).fill(String(config.sandbox.uid)));
  expect(status(server, 'Groups')).toBe('');
  expect(status(server, 'NoNewPrivs')).toBe('1');
  expect(cgroups(server)).toContain(runGroup('served-run'));
  // The command is in the run's group too, and so would be all it forks.
  expect(cgroups(pid)).toContain(runGroup('served-run'));
  expect(status(pid, 'NoNewPrivs')).toBe('1');

  // A second command of the run starts from the same server; another run's from its own.
  const second = await running('served-run', uniqueName('served2'));
  expect(starterOf(second.pid)).toBe(server);
  await sandbox.prepareRun('served-other');
  const other = await running('served-other', uniqueName('other'));
  expect(starterOf(other.pid)).not.toBe(server);
  expect(cgroups(starterOf(other.pid))).toContain(runGroup('served-other'));

  for (const p of [pid, second.pid, other.pid]) process.kill(p, 'SIGKILL');
  for (const result of await Promise.all([command, second.command, other.command]))
    expect(result.signal ?? result.exitCode).toBeTruthy();
});

test('what spawns a prepared process itself (the MCP SDK) still gets the whole chain: the cgroup join and the uid change', async () => {
  await sandbox.prepareRun('served-direct');
  const marker = uniqueName('direct');
  const prepared = await sandbox.prepare({
    runId: 'served-direct',
    argv: ['/bin/bash', '-c', `exec -a ${marker} sleep 600`],
    network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
    onImage: true,
  });
  const child = spawn(prepared.file, prepared.args, { env: prepared.env, cwd: prepared.cwd, stdio: 'ignore' });
  try {
    const [pid] = await waitFor(
      async () => hostPidsRunning(marker),
      (pids) => pids.length === 1,
      `${marker} to run`,
    );
    expect(cgroups(pid!)).toContain(runGroup('served-direct'));
    // bwrap ran as the sandbox's host uid, without new privileges.
    expect(status(sandboxOf(pid!), 'Uid').split(/\s+/)).toEqual(Array(4).fill(String(config.sandbox.uid)));
    expect(status(sandboxOf(pid!), 'NoNewPrivs')).toBe('1');
  } finally {
    child.kill('SIGKILL');
    await prepared.release();
  }
});

test("a run's spawn server that dies takes its sandboxes with it, and the next command starts another; removing the run stops it", async () => {
  await sandbox.prepareRun('served-dies');
  const marker = uniqueName('dies');
  const { pid, command } = await running('served-dies', marker);
  const server = starterOf(pid);
  process.kill(server, 'SIGKILL');
  const result = await command;
  expect(result.exitCode).toBeNull();
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the sandbox to be gone',
    5_000,
  );
  const next = await running('served-dies', uniqueName('next'));
  const again = starterOf(next.pid);
  expect(again).not.toBe(server);
  await sandbox.destroyRun('served-dies');
  expect((await next.command).exitCode).toBeNull();
  await waitFor(
    async () => hasExited(again),
    (g) => g,
    "the run's spawn server to stop",
    5_000,
  );
  await expect(
    runProcesses(sandbox, 'served-dies').runCommand({
      command: 'true',
      policy: 'none',
      timeoutMs: 10_000,
      keepBytes: 1,
    }),
  ).rejects.toThrow(/being removed/);
});

test("a run's spawn server waits on its sandboxes without a thread each: its threads count against the run's process limit", async () => {
  await sandbox.prepareRun('served-threads');
  const markers = Array.from({ length: 8 }, () => uniqueName('waited'));
  const commands = markers.map((marker) =>
    runProcesses(sandbox, 'served-threads').runCommand({
      command: `exec -a ${marker} sleep 600`,
      policy: 'none',
      timeoutMs: 120_000,
      keepBytes: 4096,
    }),
  );
  const pids = await waitFor(
    async () => markers.flatMap((m) => hostPidsRunning(m)),
    (found) => found.length === markers.length,
    'the eight sandboxes to run',
  );
  const server = starterOf(pids[0]!);
  // Waiting in a thread per process (os/exec's Wait), the server had 11 threads here.
  expect(Number(status(server, 'Threads'))).toBeLessThanOrEqual(5);
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  for (const result of await Promise.all(commands)) expect(result.exitCode).not.toBe(0);
});

test("what a run's processes see as pid 1 (a program's sandbox or the command sandbox) names no path of the host", async () => {
  const processes = runProcesses(sandbox, uniqueName('pid-one'));
  const show = 'tr "\\0" " " < /proc/1/cmdline; echo; tr "\\0" " " < /proc/1/environ; echo';
  const program = await processes.runProgram({
    argv: ['/bin/sh', '-c', show],
    // With a network: a sandbox of its own (with none, the run's helper sandbox runs it).
    policy: 'open',
    timeoutMs: 30_000,
    keepBytes: 65_536,
  });
  const command = await processes.runCommand({ command: show, policy: 'none', timeoutMs: 30_000, keepBytes: 65_536 });
  for (const { output, exitCode } of [program, command]) {
    expect(exitCode).toBe(0);
    // The sandbox's own init, with sandbox paths only.
    expect(output).toMatch(/^\/run\/agent-runs\/init /);
    expect(output).not.toContain(config.workspace.dir);
    expect(output).not.toContain(config.dataDir);
    expect(output).not.toMatch(/bwrap|--bind/);
  }
});
