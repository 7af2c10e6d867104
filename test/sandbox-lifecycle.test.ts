import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSandbox, SandboxUnavailableError } from '../activities/sandbox/create-sandbox';
import { killLeftoverSandboxes, killRunSandboxes } from '../activities/sandbox/sandbox-reaper';
import { runProcesses } from '../activities/sandbox/sandboxed-process';
import { diffAgainstHead, initRepository } from '../activities/workspace/git';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import { OutboundAddressRules } from '../core/outbound-addresses';
import { hostPidsRunning } from './helpers/host-processes';
import { createTestSandbox } from './helpers/sandbox';
import { transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor } from './helpers/test-context';

const logger = createLogger('error', 'test');

test('with AGENT_SANDBOX=bwrap and no bubblewrap, the worker refuses to start and says how to install it', async () => {
  const config = loadConfig({
    AGENT_SANDBOX_BWRAP_PATH: '/nonexistent/bwrap',
    AGENT_RUNS_WORKSPACE_DIR: '/tmp/agent-runs-nobwrap',
  });
  const err = await createSandbox(config, new OutboundAddressRules([]), logger).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandboxUnavailableError);
  expect((err as Error).message).toContain('apt-get install bubblewrap');
  expect((err as Error).message).toContain('AGENT_SANDBOX=none');
});

test('a worker that cannot limit its runs together refuses to start, unless the operator opts out; /readyz would say which', async () => {
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-nocgroups-'));
  const noCgroups = { selfCgroup: async () => '0::/\n', mountinfo: async () => '', pid: process.pid };
  const config = loadConfig({ ...process.env, AGENT_RUNS_WORKSPACE_DIR: workspace });
  const err = await createSandbox(config, new OutboundAddressRules([]), logger, noCgroups).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SandboxUnavailableError);
  expect((err as Error).message).toContain("cannot limit its runs' memory, processes and CPU");
  expect((err as Error).message).toContain('AGENT_RUN_LIMITS=off');

  const warnings: string[] = [];
  const watching = createLogger('warn', 'test', { destination: { write: (line: string) => warnings.push(line) } });
  const optedOut = loadConfig({ ...process.env, AGENT_RUNS_WORKSPACE_DIR: workspace, AGENT_RUN_LIMITS: 'off' });
  const unlimited = await createSandbox(optedOut, new OutboundAddressRules([]), watching, noCgroups);
  expect(unlimited.runLimits).toBeUndefined();
  expect(warnings.join('\n')).toContain('AGENT_RUN_LIMITS=off');

  // On this machine the worker does limit its runs, in cgroups it made and checked.
  const { sandbox } = await createTestSandbox();
  expect(sandbox.runLimits).toMatch(/^cgroup v[12] \(memory \d+ MiB, \d+ processes/);
});

test('a worker that starts kills the sandboxes a previous one left running on its workspaces', async () => {
  const { sandbox, config } = await createTestSandbox();
  const marker = uniqueName('leftover');
  await sandbox.prepareRun('run-left');
  const prepared = await sandbox.prepare({
    runId: 'run-left',
    argv: ['/bin/bash', '-c', `exec -a ${marker} sleep 600`],
    network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
    // An agent's command: a sandbox of its own, which the host spawns (a helper would enter the run's helper sandbox).
    onImage: true,
  });
  // Detached and unreferenced, as a sandbox whose worker died before --die-with-parent took hold.
  const child = spawn(prepared.file, prepared.args, {
    env: prepared.env,
    cwd: prepared.cwd,
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the leftover sandbox to run',
  );
  // A scan for another directory spares it (and keeps what its command line says for the next scan).
  expect(await killLeftoverSandboxes(`${config.workspace.dir}-elsewhere`)).not.toContain(child.pid);
  const killed = await killLeftoverSandboxes(config.workspace.dir);
  expect(killed).toContain(child.pid);
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the leftover to be gone',
    5_000,
  );
});

test("a run's removal waits for no sandbox that is already a zombie (its parent may take its time to reap it)", async () => {
  const { sandbox, config } = await createTestSandbox();
  await sandbox.prepareRun('run-zombie');
  const prepared = await sandbox.prepare({
    runId: 'run-zombie',
    argv: ['/bin/sleep', '600'],
    network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
    onImage: true,
  });
  // Its parent becomes a `sleep`, which never reaps it.
  const parent = spawn('/bin/sh', ['-c', '"$@" & exec sleep 600', 'sh', prepared.file, ...prepared.args], {
    env: prepared.env,
    cwd: prepared.cwd,
    detached: true,
    stdio: 'ignore',
  });
  const stat = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return '';
    }
  };
  const bwrapPid = await waitFor(
    async () =>
      readdirSync('/proc')
        .map(Number)
        .find((pid) => / \(bwrap\) \S+ (\d+) /.exec(stat(pid))?.[1] === String(parent.pid)),
    (pid) => pid !== undefined,
    'the sandbox to start',
  );
  try {
    // Seen alive once (its command line is kept), then it dies and stays a zombie.
    expect(await killLeftoverSandboxes(`${config.workspace.dir}-elsewhere`)).not.toContain(bwrapPid);
    process.kill(bwrapPid!, 'SIGKILL');
    await waitFor(
      async () => stat(bwrapPid!),
      (line) => / \(bwrap\) Z /.test(line),
      'the sandbox to be a zombie',
    );
    expect(await killRunSandboxes(path.join(config.workspace.dir, 'run-zombie'))).not.toContain(bwrapPid);
  } finally {
    process.kill(-parent.pid!, 'SIGKILL');
  }
});

test('SIGKILL of the process that started a sandbox takes the sandbox with it', async () => {
  const { sandbox } = await createTestSandbox();
  const marker = uniqueName('orphan');
  await sandbox.prepareRun('run-orphan');
  const prepared = await sandbox.prepare({
    runId: 'run-orphan',
    argv: ['/bin/bash', '-c', `(exec -a ${marker} sleep 600) & exec -a ${marker} sleep 600`],
    network: { kind: 'proxy', policy: 'open', onRefusal: () => undefined },
  });
  // A stand-in worker: a process that starts the sandbox and is then killed without warning.
  const parent = spawn(
    process.execPath,
    [
      '-e',
      'require("child_process").spawn(process.argv[1], JSON.parse(process.argv[2]), { stdio: "ignore" }); setInterval(() => {}, 1000);',
      prepared.file,
      JSON.stringify(prepared.args),
    ],
    { env: prepared.env, stdio: 'ignore' },
  );
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 2,
    'the sandboxed processes to run',
  );
  parent.kill('SIGKILL');
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the sandbox to die with its parent',
    5_000,
  );
  await prepared.release();
});

test('AGENT_SANDBOX=none is a choice that every run states in its transcript', async () => {
  const ctx = await createTestContext({ env: { AGENT_SANDBOX: 'none' } });
  try {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('unsandboxed');
    ctx.model.script(marker, () => ({ text: 'done' }));
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set({ Authorization: `Bearer ${key}` })
      .send({ prompt: `Hi ${marker}` });
    const runId = res.body.run_id as string;
    await waitForState(ctx, key, runId, ['SUCCEEDED']);
    const notices = (await transcript(ctx, runId))
      .filter((e) => e.kind === 'notice')
      .map((e) => String(e.payload.message));
    expect(notices.some((m) => m.includes('AGENT_SANDBOX=none'))).toBe(true);
  } finally {
    await ctx.close();
  }
});

test("removing a workspace while the run's processes swap directories for symlinks deletes nothing outside it", async () => {
  const { sandbox, config } = await createTestSandbox();
  const victim = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-victim-'));
  for (const f of ['f1', 'f2', 'f3']) writeFileSync(path.join(victim, f), 'host file');
  await sandbox.prepareRun('run-race');
  const marker = uniqueName('swapper');
  // Swaps directories full of files with symlinks to a host path, as fast as bash can.
  const swapper = [
    'cd /workspace',
    'for i in $(seq 100); do mkdir -p p$i/z && touch p$i/z/f1 p$i/z/f2 p$i/z/f3 && ln -s ' + victim + ' p$i/s; done',
    'while :; do for i in $(seq 100); do mv -T p$i/z p$i/t; mv -T p$i/s p$i/z; mv -T p$i/t p$i/s; done; done',
  ].join('; ');
  const attack = runProcesses(sandbox, 'run-race').runCommand({
    command: `exec -a ${marker} bash -c '${swapper}'`,
    policy: 'none',
    timeoutMs: 60_000,
    keepBytes: 1024,
  });
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the swapper to run',
  );
  await waitFor(
    async () => existsSync(path.join(config.workspace.dir, 'run-race', 'p100')),
    Boolean,
    'the swapper to set up',
  );
  await sandbox.destroyRun('run-race');
  expect(hostPidsRunning(marker)).toHaveLength(0);
  expect(existsSync(path.join(config.workspace.dir, 'run-race'))).toBe(false);
  expect(readdirSync(victim).sort()).toEqual(['f1', 'f2', 'f3']);
  expect((await attack).exitCode).not.toBe(0);
  // And nothing of the run starts while it is being removed.
  await expect(runProcesses(sandbox, 'run-race').exec(['true'])).rejects.toThrow(/being removed/);
});

test('a git filter the run configured cannot hold the diff step past cancellation', async () => {
  const { processes } = await createTestSandbox();
  const run = await processes('run-filter');
  const marker = uniqueName('filter');
  await initRepository(run);
  await run.runCommand({
    command: `git config filter.x.clean "bash -c 'exec -a ${marker} sleep 100000'"; echo '* filter=x' > .gitattributes; echo hi > a.txt`,
    policy: 'none',
    timeoutMs: 10_000,
    keepBytes: 1024,
  });
  const abort = new AbortController();
  const diff = diffAgainstHead(run, '', abort.signal).catch((e: unknown) => e);
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the filter to run',
  );
  abort.abort();
  expect(await diff).toBeInstanceOf(Error);
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the filter to be gone',
    5_000,
  );
});

test("a process's variables (an MCP server's env, an image's Env) reach only the sandbox, never the host-side launchers", async () => {
  const { sandbox, processes } = await createTestSandbox();
  const runId = 'run-env';
  const run = await processes(runId);
  // A PATH that would find a `setpriv` or `bwrap` of the attacker's before the real one, and a
  // preload, as a hostile MCP server config or image could set them.
  const trap = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-trap-'));
  const sprung = path.join(trap, 'sprung');
  for (const name of ['setpriv', 'bwrap', 'sh'])
    writeFileSync(path.join(trap, name), `#!/bin/sh\necho host > ${sprung}\n`, { mode: 0o755 });
  const env = { PATH: `${trap}:/usr/bin:/bin`, LD_PRELOAD: path.join(trap, 'evil.so'), MARKER: 'inside' };
  // A process with a sandbox of its own (an MCP server, an agent's command): the host side gets a fixed environment.
  const prepared = await sandbox.prepare({
    runId,
    argv: ['/bin/sh', '-c', 'echo "marker=$MARKER path=$PATH preload=$LD_PRELOAD"'],
    env,
    network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
    onImage: true,
  });
  try {
    expect(prepared.entersSandbox).toBeUndefined();
    expect(prepared.env).toEqual({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' });
    expect(path.isAbsolute(prepared.file)).toBe(true);
  } finally {
    await prepared.release();
  }
  // A platform helper enters the run's helper sandbox: its variables go to the server in there, not to a host process.
  const helper = await sandbox.prepare({
    runId,
    argv: ['/bin/sh', '-c', 'true'],
    env,
    network: { kind: 'proxy', policy: 'none', onRefusal: () => undefined },
  });
  expect(helper).toMatchObject({ entersSandbox: true, cwd: '/workspace' });
  expect(helper.launch).toBeDefined();
  const output = await run.exec(['/bin/sh', '-c', 'echo "marker=$MARKER path=$PATH"'], { env });
  expect(output).toContain(`marker=inside path=${trap}:/usr/bin:/bin`);
  expect(existsSync(sprung)).toBe(false);
});
