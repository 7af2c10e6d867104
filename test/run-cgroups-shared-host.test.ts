import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseMounts, parseSelfCgroup, ownDir } from '../activities/sandbox/cgroup-mounts';
import { type RunProcesses } from '../activities/sandbox/sandboxed-process';
import { hasExited } from './helpers/host-processes';
import { createTestSandbox, sleepingCommand } from './helpers/sandbox';
import { uniqueName } from './helpers/test-context';

/**
 * Workers on one host share its cgroup hierarchy, and a run handed over from one worker to
 * another keeps its id: each worker's run groups are its own (`agent-runs/<worker id>/<run id>`),
 * so the worker that lets a run go kills nothing the other now runs for it.
 */

const cgroupOf = (pid: number) => readFileSync(`/proc/${pid}/cgroup`, 'utf8');

/** The directory of the run's group a process is in: its pids group (cgroup v1) or its unified one (v2). */
function runGroupDir(pid: number, runId: string): string {
  const mounts = parseMounts(readFileSync('/proc/self/mountinfo', 'utf8'));
  for (const own of parseSelfCgroup(cgroupOf(pid))) {
    if (path.basename(own.path) !== runId) continue;
    const v2 = own.controllers.length === 0;
    const mount = mounts.find((m) =>
      v2 ? m.type === 'cgroup2' : m.type === 'cgroup' && m.controllers.includes('pids'),
    );
    const dir = mount && ownDir(mount, own.path);
    if (dir && (v2 || own.controllers.includes('pids'))) return dir;
  }
  throw new Error(`process ${pid} is in no group of run ${runId}: ${cgroupOf(pid)}`);
}

const sleeping = (processes: RunProcesses) => sleepingCommand(processes, uniqueName('sleeper'), 'none');

test("the same run on two workers of one host: removing it from the one that let it go leaves the other's command running", async () => {
  const [from, to] = [await createTestSandbox(), await createTestSandbox()];
  expect(from.config.worker.id).not.toBe(to.config.worker.id);
  const runId = uniqueName('handed-over');
  const left = await sleeping(await from.processes(runId));
  const running = await sleeping(await to.processes(runId));
  expect(cgroupOf(left.pid)).toContain(`/agent-runs/${from.config.worker.id}/${runId}\n`);
  expect(cgroupOf(running.pid)).toContain(`/agent-runs/${to.config.worker.id}/${runId}\n`);

  await from.sandbox.destroyRun(runId);
  expect((await left.command).exitCode).toBeNull();
  expect(hasExited(running.pid)).toBe(false);

  await to.sandbox.destroyRun(runId);
  expect((await running.command).exitCode).toBeNull();
});

test('a worker that starts again under its name kills and removes the run groups its predecessor left', async () => {
  const before = await createTestSandbox();
  const runId = uniqueName('left-behind');
  const leftover = await sleeping(await before.processes(runId));
  const group = runGroupDir(leftover.pid, runId);
  expect(existsSync(group)).toBe(true);

  // The same WORKER_ID and workspace directory, as a worker restarted on its volume has.
  await createTestSandbox({
    WORKER_ID: before.config.worker.id,
    AGENT_RUNS_WORKSPACE_DIR: before.config.workspace.dir,
    AGENT_RUNS_DATA_DIR: before.config.dataDir,
  });
  expect((await leftover.command).exitCode).toBeNull();
  expect(hasExited(leftover.pid)).toBe(true);
  expect(existsSync(group)).toBe(false);
});
