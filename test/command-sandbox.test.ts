import { readFileSync } from 'node:fs';
import { CommandSandbox } from '../activities/sandbox/command-sandbox';
import type { NetworkRefusal } from '../activities/sandbox/egress-proxy';
import { HelperSandbox } from '../activities/sandbox/helper-sandbox';
import { DelegatingSandbox } from '../activities/sandbox/delegating-sandbox';
import type { PreparedProcess, Sandbox, SandboxProcessSpec } from '../activities/sandbox/sandbox';
import { runProcesses } from '../activities/sandbox/sandboxed-process';
import type { NetworkPolicy } from '../core/network-policy';
import { hasExited, hostPidsRunning } from './helpers/host-processes';
import { SERVER_ATTACK, SERVER_ATTACKED } from './helpers/server-attack';
import { createTestSandbox } from './helpers/sandbox';
import { uniqueName, waitFor } from './helpers/test-context';

/**
 * The agent's commands (and setup commands) enter one sandbox per run and network policy that
 * stays up between them, instead of starting one each. It must be the sandbox each had (the
 * run's uid, workspace and network policy, a pid namespace apart from the helpers' and other
 * runs'), nothing a command starts may outlive it, and its results must read as before.
 */

let sandbox: HelperSandbox;
let commands: CommandSandbox;

beforeAll(async () => {
  sandbox = (await createTestSandbox()).sandbox as HelperSandbox;
  expect(sandbox).toBeInstanceOf(HelperSandbox);
  commands = sandbox.inner as CommandSandbox;
  expect(commands).toBeInstanceOf(CommandSandbox);
});

async function run(runId: string, on: Sandbox = sandbox) {
  await on.prepareRun(runId);
  return runProcesses(on, runId);
}

const command = (
  processes: Awaited<ReturnType<typeof run>>,
  text: string,
  policy: NetworkPolicy = 'none',
  options: { timeoutMs?: number; onRefusal?: (refusal: NetworkRefusal) => void } = {},
) =>
  processes.runCommand({
    command: text,
    policy,
    timeoutMs: options.timeoutMs ?? 30_000,
    keepBytes: 64 * 1024,
    ...options,
  });

/** The host pid of the process that started the (only) process named `marker`: its command sandbox's server. */
async function serverOf(marker: string): Promise<number> {
  const [pid] = await waitFor(
    async () => hostPidsRunning(marker),
    (pids) => pids.length === 1,
    `${marker} to run`,
  );
  const ppid = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  expect(readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0')).toEqual(
    expect.arrayContaining(['-spawn-server', '-contained']),
  );
  return Number(ppid);
}

/** The host pid of the server of the run's command sandbox of `policy` (it starts one if none runs). */
async function serverOfCommand(processes: Awaited<ReturnType<typeof run>>, policy: NetworkPolicy): Promise<number> {
  const marker = uniqueName('server-of');
  const running = command(processes, `exec -a ${marker} sleep 2`, policy);
  const server = await serverOf(marker);
  await running;
  return server;
}

const PROBE =
  'echo "pidns=$(readlink /proc/self/ns/pid) server=$PPID uid=$(id -u) host=$(hostname) pwd=$PWD proxy=${HTTP_PROXY:-none}"; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "';
const sandboxOf = (output: string) => /pidns=(\S+) server=(\d+)/.exec(output)!.slice(1);

test("a run's commands share one sandbox per network policy, which is a sandbox; helpers and other runs have their own", async () => {
  const processes = await run('commands-shared');
  const first = await command(processes, PROBE);
  const second = await command(processes, PROBE);
  expect(first.exitCode).toBe(0);
  const [line, ...interfaces] = first.output.trim().split('\n');
  expect(line).toMatch(/^pidns=pid:\[\d+\] server=\d+ uid=1000 host=sandbox pwd=\/workspace proxy=none$/);
  expect(interfaces).toEqual(['lo']);
  expect(sandboxOf(second.output)).toEqual(sandboxOf(first.output));

  // Through the egress proxy: a sandbox of its own, with the bridge on its loopback.
  const open = await command(
    processes,
    `${PROBE}; (echo > /dev/tcp/127.0.0.1/3128) 2>/dev/null && echo bridge-open || echo bridge-closed`,
    'open',
  );
  expect(open.output).toMatch(/uid=1000 host=sandbox pwd=\/workspace proxy=http:\/\/127\.0\.0\.1:3128/);
  expect(open.output).toContain('bridge-open');
  expect(open.output.split('\n')).toContain('lo');
  expect(sandboxOf(open.output)[0]).not.toBe(sandboxOf(first.output)[0]);
  const none = await command(processes, '(echo > /dev/tcp/127.0.0.1/3128) 2>/dev/null && echo open || echo closed');
  expect(none.output).toBe('closed\n');

  const helper = await processes.exec(['sh', '-c', PROBE]);
  expect(sandboxOf(helper)[0]).not.toBe(sandboxOf(first.output)[0]);
  const other = await command(await run('commands-other'), PROBE);
  expect(sandboxOf(other.output)[0]).not.toBe(sandboxOf(first.output)[0]);
});

test('results read as from a sandbox of its own: exit codes, 128+n for a signal, a timeout', async () => {
  const processes = await run('commands-status');
  expect(await command(processes, 'echo out; echo err >&2; exit 3')).toMatchObject({
    exitCode: 3,
    signal: null,
    output: expect.stringMatching(/out\n[\s\S]*err\n|err\n[\s\S]*out\n/),
  });
  expect(await command(processes, 'kill -9 $$')).toMatchObject({ exitCode: 137, signal: null, timedOut: false });
  const missing = await command(processes, 'no-such-program-here');
  expect(missing.exitCode).toBe(127);
  expect(missing.output).toContain('command not found');
  const slow = await command(processes, 'sleep 600', 'none', { timeoutMs: 1_000 });
  expect(slow).toMatchObject({ timedOut: true, exitCode: null });
  expect(slow.signal).not.toBeNull();
});

test('what a command leaves running dies with it, also when it is killed for its time', async () => {
  const processes = await run('commands-leftovers');
  const left = uniqueName('left');
  const background = await command(
    processes,
    `(exec -a ${left} sleep 600) & until grep -qas ${left} /proc/[0-9]*/cmdline; do sleep 0.05; done; echo started`,
  );
  expect(background.output).toBe('started\n');
  await waitFor(
    async () => hostPidsRunning(left).length,
    (n) => n === 0,
    'the background process to be gone',
    5_000,
  );
  const slow = uniqueName('slow');
  const killed = command(processes, `(exec -a ${slow} sleep 600) & exec -a ${slow} sleep 600`, 'open', {
    timeoutMs: 3_000,
  });
  await waitFor(
    async () => hostPidsRunning(slow).length,
    (n) => n === 2,
    'the command and its child to run',
  );
  expect(await killed).toMatchObject({ timedOut: true });
  await waitFor(
    async () => hostPidsRunning(slow).length,
    (n) => n === 0,
    'the timed-out command and its child to be gone',
    5_000,
  );
});

test("refused connections are the command's that made them", async () => {
  const processes = await run('commands-refusals');
  const heard: NetworkRefusal[] = [];
  const refused = await command(
    processes,
    `exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT 169.254.169.254:80 HTTP/1.1\\r\\nHost: 169.254.169.254:80\\r\\n\\r\\n' >&3; head -1 <&3`,
    'open',
    { onRefusal: (r) => heard.push(r) },
  );
  expect(refused.output).toContain('403');
  expect(refused.refusals).toHaveLength(1);
  expect(refused.refusals[0]).toMatchObject({ host: '169.254.169.254' });
  expect(heard).toHaveLength(1);
  const quiet = await command(processes, 'echo nothing refused', 'open');
  expect(quiet.refusals).toEqual([]);
});

test('a command sandbox that dies takes its command with it; an idle one stops; destroying the run stops it and starts no other', async () => {
  const processes = await run('commands-dies');
  const marker = uniqueName('inflight');
  const inflight = command(processes, `exec -a ${marker} sleep 600`);
  process.kill(await serverOf(marker), 'SIGKILL');
  expect((await inflight).exitCode).not.toBe(0);
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the command to be gone',
    5_000,
  );
  expect((await command(processes, 'echo back')).output).toBe('back\n');

  const quick = new CommandSandbox(commands.inner, 300);
  const idle = await run('commands-idle', quick);
  const first = uniqueName('idle');
  const done = command(idle, `exec -a ${first} sleep 0.5`);
  const server = await serverOf(first);
  await done;
  await waitFor(
    async () => hasExited(server),
    (gone) => gone,
    'the idle command sandbox to stop',
    5_000,
  );
  const second = uniqueName('destroyed');
  const running = command(idle, `exec -a ${second} sleep 600`).catch((e: unknown) => e);
  const again = await serverOf(second);
  expect(again).not.toBe(server);
  await quick.destroyRun('commands-idle');
  await running;
  expect(hasExited(again)).toBe(true);
  const after = await command(idle, 'true').catch((e: unknown) => e);
  expect(after instanceof Error ? after.message : (after as { output: string }).output).toMatch(/being removed/);
});

test("a command reaches neither its sandbox's pipes nor its server: its output, the bridge and the sandbox survive kill -9 -1", async () => {
  const processes = await run('commands-attack');
  const server = await serverOfCommand(processes, 'open');
  // The server is the sandbox's pid 1 and not dumpable: no process there holds its pipes or can
  // open them. (This frame would have said the run's first command exited 0.)
  const forge = String.raw`exec 2>&1; echo server=$PPID; ls /proc/1/fd 2>&1 | head -1; printf '\000\000\000\025\000\000\000\001\017{"code":0,"signal":0}' > /proc/1/fd/1 && echo forged || echo refused`;
  const forged = await command(processes, forge, 'open');
  expect(forged.exitCode).toBe(0);
  expect(forged.output).toMatch(/^server=1\n.*Permission denied.*\n[\s\S]*refused\n$/);
  // Every signal it may send from inside passes the server by (SIGSTOP and SIGKILL among them,
  // and faults queued with sigqueue), and it may not set the server's limits (a CPU limit of a
  // second would have the kernel kill it).
  const killer = await command(processes, SERVER_ATTACK, 'open');
  expect(killer).toMatchObject({ exitCode: 0, signal: null, output: `${SERVER_ATTACKED}bridge-open\n` });
  expect(await serverOfCommand(processes, 'open')).toBe(server);
});

test("commands' orphans are reaped, and never a command's own exit status with them", async () => {
  const processes = await run('commands-orphans');
  // Each subshell exits at once; its background child is killed with the command's group, parentless.
  const orphans = 'for i in $(seq 1 20); do (sleep 30 &); done';
  const statuses = await Promise.all(
    [3, 4, 5, 6, 7, 8].map((code) => command(processes, `${orphans}; exit ${code}`, 'none')),
  );
  expect(statuses.map((r) => r.exitCode)).toEqual([3, 4, 5, 6, 7, 8]);
  const zombies = `z() { c=0; for f in /proc/[0-9]*/stat; do read -r _ _ st _ < "$f" 2>/dev/null && [ "$st" = Z ] && c=$((c+1)); done; echo $c; }`;
  // The reaper runs on SIGCHLD: a deadline for it, not a guess at how long it takes.
  const count = await command(
    processes,
    `${zombies}; for t in $(seq 1 100); do [ "$(z)" = 0 ] && break; sleep 0.05; done; z`,
    'none',
  );
  expect(count.output).toBe('0\n');
});

test('the next command never meets what an earlier one left: a process that left its group, /dev/shm', async () => {
  const processes = await run('commands-sweep');
  const daemon = uniqueName('daemon');
  // Whether a process with the daemon's argv[0] runs (grep would find its own command line).
  const running = `running() { for f in /proc/[0-9]*/cmdline; do IFS= read -r -d '' a0 < "$f" 2>/dev/null && [ "$a0" = ${daemon} ] && return 0; done; return 1; }`;
  // setsid: a group and session of its own, holding the command's output.
  const first = await command(
    processes,
    `${running}; setsid bash -c 'exec -a ${daemon} sleep 600' & until running; do sleep 0.05; done; echo kept > /dev/shm/left; echo started`,
    'open',
  );
  expect(first.output).toBe('started\n');
  const second = await command(
    processes,
    `${running}; running && echo daemon-alive || echo daemon-gone; ls -A /dev/shm | wc -l`,
    'open',
  );
  expect(second.output).toBe('daemon-gone\n0\n');
  expect(hostPidsRunning(daemon)).toEqual([]);
});

test("a run's command sandbox of another network policy is stopped when its policy changes", async () => {
  const processes = await run('commands-policy');
  const openServer = await serverOfCommand(processes, 'open');
  expect(hasExited(openServer)).toBe(false);
  await command(processes, 'echo now offline', 'none');
  await waitFor(
    async () => hasExited(openServer),
    (gone) => gone,
    'the sandbox of the old policy to stop',
    5_000,
  );
});

test('a command whose sandbox cannot start says so as its output, with status 1', async () => {
  class NoServedSandbox extends DelegatingSandbox {
    override prepare(spec: SandboxProcessSpec): Promise<PreparedProcess> {
      return spec.spawnServer ? Promise.reject(new Error('bwrap: no sandbox today')) : this.inner.prepare(spec);
    }
  }
  const failing = new CommandSandbox(new NoServedSandbox(commands.inner));
  const processes = await run('commands-unstartable', failing);
  const result = await command(processes, 'echo never');
  expect(result.exitCode).toBe(1);
  expect(result.output).toContain('no sandbox today');
  expect(result.output).not.toContain('never');
});

test("a fork bomb that fills the run's process limit ends that command, never its sandbox's server", async () => {
  const limited = (await createTestSandbox({ AGENT_SANDBOX_MAX_PROCESSES: '64' })).sandbox;
  const processes = await run('commands-bomb', limited);
  const server = await serverOfCommand(processes, 'none');
  // The server counts against the same limit, and Go ends a process that cannot make a thread.
  for (let i = 0; i < 3; i++) {
    // The command forks the sleep it waits for and the bomb's shell before the bomb starts, then
    // runs only builtins (wait, echo) and forks nothing: once the limit is full, bash retries a
    // fork with backoff (1 + 2 + 4 + 8 s) past the command's timeout. (With the bomb called from
    // the command's shell, its second fork lost the race to the bomb's first children now and
    // then: a busy worker made it about 1 in 30.)
    const bomb = await command(
      processes,
      'sleep 2 & wait_for=$!; (bomb() { bomb | bomb & }; bomb) & wait "$wait_for"; echo bomb-done',
      'none',
      { timeoutMs: 8_000 },
    );
    expect({
      filled: /Resource temporarily unavailable/.test(bomb.output),
      done: bomb.output.includes('bomb-done'),
      exitCode: bomb.exitCode,
      signal: bomb.signal,
      timedOut: bomb.timedOut,
      ...(bomb.output.includes('bomb-done') ? {} : { tail: bomb.output.slice(-400) }),
    }).toEqual({ filled: true, done: true, exitCode: 0, signal: null, timedOut: false });
    expect(await serverOfCommand(processes, 'none')).toBe(server);
  }
});
