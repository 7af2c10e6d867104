import { readFileSync } from 'node:fs';
import { HelperSandbox } from '../activities/sandbox/helper-sandbox';
import type { Sandbox } from '../activities/sandbox/sandbox';
import { ExecError, runProcesses } from '../activities/sandbox/sandboxed-process';
import { hasExited, hostPidsRunning } from './helpers/host-processes';
import { SERVER_ATTACK, SERVER_ATTACKED } from './helpers/server-attack';
import { createTestSandbox } from './helpers/sandbox';
import { uniqueName, waitFor } from './helpers/test-context';

/**
 * The platform's own helpers (git, the file tools) enter one sandbox per run that stays up
 * between them, instead of starting one each. It must be the sandbox each had (no network, the
 * run's workspace, its own uid and pid namespace apart from the agent's commands), and nothing a
 * helper starts may outlive it.
 */

let sandbox: HelperSandbox;

beforeAll(async () => {
  sandbox = (await createTestSandbox()).sandbox as HelperSandbox;
  expect(sandbox).toBeInstanceOf(HelperSandbox);
});

async function run(runId: string, on: Sandbox = sandbox) {
  await on.prepareRun(runId);
  return runProcesses(on, runId);
}

/** The host pid of the process that started the (only) process named `marker`: the helper sandbox's server. */
async function serverOf(marker: string): Promise<number> {
  const [pid] = await waitFor(
    async () => hostPidsRunning(marker),
    (pids) => pids.length === 1,
    `${marker} to run`,
  );
  const ppid = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  expect(readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').slice(-3)).toEqual([
    '-spawn-server',
    '-contained',
    '',
  ]);
  return Number(ppid);
}

test("a run's helpers share one sandbox, which is a sandbox: no network, the run's uid, its workspace; the agent's commands get their own", async () => {
  const processes = await run('helper-shared');
  const probe =
    'echo "pidns=$(readlink /proc/self/ns/pid) server=$PPID uid=$(id -u) host=$(hostname) pwd=$PWD home=$HOME say=$SAY"; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "';
  const first = await processes.exec(['sh', '-c', probe], { env: { SAY: 'hello' } });
  const second = await processes.exec(['sh', '-c', probe], { env: { SAY: 'again' }, cwd: '' });
  const [line1, ...interfaces] = first.trim().split('\n');
  expect(line1).toMatch(
    /^pidns=pid:\[\d+\] server=\d+ uid=1000 host=sandbox pwd=\/workspace home=\/home\/agent say=hello$/,
  );
  // No network but its own loopback.
  expect(interfaces).toEqual(['lo']);
  const shared = (out: string) => /pidns=(\S+) server=(\d+)/.exec(out)!.slice(1);
  expect(shared(second)).toEqual(shared(first));
  expect(second).toContain('say=again');
  const command = await processes.runCommand({ command: probe, policy: 'none', timeoutMs: 30_000, keepBytes: 4096 });
  expect(command.exitCode).toBe(0);
  expect(shared(command.output)[0]).not.toBe(shared(first)[0]);
  // Another run's helpers are in another sandbox.
  const other = await (await run('helper-other')).exec(['sh', '-c', probe]);
  expect(shared(other)[0]).not.toBe(shared(first)[0]);
});

test('what a helper leaves running dies with it, also when it is killed for its time', async () => {
  const processes = await run('helper-leftovers');
  const left = uniqueName('left');
  // It answers once its background process runs.
  const script = `(exec -a ${left} sleep 600) & until grep -qas ${left} /proc/[0-9]*/cmdline; do sleep 0.05; done; echo started`;
  expect(await processes.exec(['bash', '-c', script])).toBe('started\n');
  await waitFor(
    async () => hostPidsRunning(left).length,
    (n) => n === 0,
    'the background process to be gone',
    5_000,
  );
  const slow = uniqueName('slow');
  const started = Date.now();
  const killed = processes
    .exec(['bash', '-c', `(exec -a ${slow} sleep 600) & exec -a ${slow} sleep 600`], { timeoutMs: 3_000 })
    .catch((e: unknown) => e);
  await waitFor(
    async () => hostPidsRunning(slow).length,
    (n) => n === 2,
    'the helper and its child to run',
  );
  expect(await killed).toBeInstanceOf(ExecError);
  expect(Date.now() - started).toBeLessThan(10_000);
  await waitFor(
    async () => hostPidsRunning(slow).length,
    (n) => n === 0,
    'the timed-out helper and its child to be gone',
    5_000,
  );
});

test('a helper sandbox that dies takes its helpers with it, and the next helper starts a new one', async () => {
  const processes = await run('helper-dies');
  const marker = uniqueName('inflight');
  const inflight = processes.exec(['bash', '-c', `exec -a ${marker} sleep 600`]).catch((e: unknown) => e);
  const server = await serverOf(marker);
  process.kill(server, 'SIGKILL');
  const err = await inflight;
  expect(err).toBeInstanceOf(Error);
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the helper to be gone',
    5_000,
  );
  expect(await processes.exec(['sh', '-c', 'echo back'])).toBe('back\n');
});

test('an idle helper sandbox stops; destroying the run stops it at once and starts no other', async () => {
  const quick = new HelperSandbox(sandbox.inner, 300);
  const processes = await run('helper-idle', quick);
  const first = uniqueName('idle');
  const done = processes.exec(['bash', '-c', `exec -a ${first} sleep 0.5`]);
  const server = await serverOf(first);
  await done;
  await waitFor(
    async () => hasExited(server),
    (g) => g,
    'the idle helper sandbox to stop',
    5_000,
  );

  const second = uniqueName('destroyed');
  const inflight = processes.exec(['bash', '-c', `exec -a ${second} sleep 600`]).catch((e: unknown) => e);
  const again = await serverOf(second);
  expect(again).not.toBe(server);
  await quick.destroyRun('helper-idle');
  expect(await inflight).toBeInstanceOf(Error);
  expect(hasExited(again)).toBe(true);
  await expect(processes.exec(['true'])).rejects.toThrow(/being removed/);
});

test('a process that leaves its group holding the output neither holds up the helper nor outlives it', async () => {
  const processes = await run('helper-escape');
  const escaped = uniqueName('escaped');
  const started = Date.now();
  // setsid: a group and session of its own, with the helper's stdout and stderr.
  const script = `setsid bash -c 'exec -a ${escaped} sleep 600' & until grep -qas ${escaped} /proc/[0-9]*/cmdline; do sleep 0.05; done; echo answered`;
  const out = await processes.exec(['bash', '-c', script], { timeoutMs: 60_000 });
  expect(out).toBe('answered\n');
  expect(Date.now() - started).toBeLessThan(15_000);
  // Once the sandbox runs nothing of the worker's, whatever escaped is killed.
  await waitFor(
    async () => hostPidsRunning(escaped).length,
    (n) => n === 0,
    'the escaped process to be gone',
    5_000,
  );
});

test("a helper reaches neither the helper sandbox's pipes nor its server: signals pass it by, helpers go on in it", async () => {
  const processes = await run('helper-attack');
  const marker = uniqueName('helper-attack');
  const first = processes.exec(['bash', '-c', `exec -a ${marker} sleep 1`]);
  const server = await serverOf(marker);
  await first;
  // The server is the sandbox's pid 1 and not dumpable: no process there holds its pipes or can open them.
  const probe = await processes.exec([
    'bash',
    '-c',
    `echo server=$PPID; ls /proc/1/fd 2>&1 | head -1; printf '\\377\\377\\377\\377\\0\\0\\0\\1\\15' > /proc/1/fd/1 && echo garbled || echo refused`,
  ]);
  expect(probe).toMatch(/^server=1\n.*Permission denied.*\n[\s\S]*refused\n$/);
  // Every signal it may send from inside passes the server by, and its limits are not the helper's to set.
  expect(await processes.exec(['bash', '-c', SERVER_ATTACK], { timeoutMs: 10_000 })).toBe(
    `${SERVER_ATTACKED}no-bridge\n`,
  );
  const again = uniqueName('helper-after');
  const next = processes.exec(['bash', '-c', `exec -a ${again} sleep 1`]);
  expect(await serverOf(again)).toBe(server);
  await next;
  expect(await processes.exec(['bash', '-c', 'echo again'])).toBe('again\n');
});

test('a helper killed for its time whose server does not act (stopped from the host) takes that helper sandbox with it', async () => {
  const processes = await run('helper-stopped');
  // Its sandbox already up: the helper's time is not spent starting it.
  await processes.exec(['true']);
  const stopper = uniqueName('stopper');
  const started = Date.now();
  const running = processes.exec(['bash', '-c', `exec -a ${stopper} sleep 600`], { timeoutMs: 5_000 });
  const server = await serverOf(stopper);
  // Nothing inside can stop it any more: only the host can.
  process.kill(server, 'SIGSTOP');
  expect(await running.catch((e: unknown) => e)).toBeInstanceOf(Error);
  expect(Date.now() - started).toBeLessThan(25_000);
  await waitFor(
    async () => hostPidsRunning(stopper).length,
    (n) => n === 0,
    'the stopped sandbox to be gone',
    5_000,
  );
  // The server went with it (a server that had killed the helper itself would be stopped, not gone).
  await waitFor(
    async () => hasExited(server),
    (gone) => gone,
    'the stopped server to be gone',
    5_000,
  );
  expect(await processes.exec(['bash', '-c', 'echo again'])).toBe('again\n');
});

test("each helper gets the sandbox's limits, not the server, and a missing program is status 127 as before", async () => {
  const processes = await run('helper-limits');
  const marker = uniqueName('limited');
  const inflight = processes.exec(['bash', '-c', `ulimit -t; exec -a ${marker} sleep 600`]).catch((e: unknown) => e);
  const server = await serverOf(marker);
  const limit = (pid: number) => /^Max cpu time\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))![1];
  expect(limit(hostPidsRunning(marker)[0]!)).toBe(String((await createTestSandbox()).config.sandbox.limits.cpuSeconds));
  expect(limit(server)).toBe('unlimited');
  await sandbox.destroyRun('helper-limits');
  await inflight;
  await sandbox.prepareRun('helper-limits');
  const missing = await processes.exec(['no-such-program-here']).catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(ExecError);
  expect(missing).toMatchObject({ exitCode: 127 });
  expect((missing as ExecError).stderr).toContain('no-such-program-here: command not found');
});
