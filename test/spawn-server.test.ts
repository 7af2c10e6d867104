import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { forkLauncher, type LaunchedProcess } from '../activities/sandbox/launched-process';
import { runProcess } from '../activities/sandbox/run-process';
import type { PreparedProcess } from '../activities/sandbox/sandbox';
import { runDiskQuota } from '../activities/sandbox/run-disk';
import { locateSandboxInit } from '../activities/sandbox/sandbox-init-binary';
import { SpawnServer } from '../activities/sandbox/spawn-server';
import { probeSpawns } from '../bench/spawn-probe';
import { hostPidsRunning } from './helpers/host-processes';
import { waitFor } from './helpers/test-context';
import { createTestSandbox } from './helpers/sandbox';

/**
 * The spawn server: the worker's processes started by `sandbox-init -spawn-server` instead of by
 * forking the worker. What a process sees (real pipes, its own exit status, standard input) is
 * what a fork gives it, and nothing it starts outlives the worker.
 */

let initPath: string;
let server: SpawnServer;

beforeAll(async () => {
  initPath = await locateSandboxInit(undefined);
  server = SpawnServer.onHost(initPath);
});
afterAll(() => server.close());

function finished(
  child: LaunchedProcess,
): Promise<{ code: number | null; signal: string | null; out: Buffer; err: string }> {
  const out: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code: number | null, signal: string | null) =>
      resolve({ code, signal, out: Buffer.concat(out), err }),
    );
  });
}

const sh = (script: string, options: { stdin?: boolean; detached?: boolean } = {}) =>
  server.launch('/bin/bash', ['-c', script], { cwd: '/', env: { PATH: '/usr/bin:/bin', GREETING: 'hi' }, ...options });

test('a process gets real pipes, its environment and directory, and its exit status; the server is its parent', async () => {
  const result = await finished(
    sh(
      'echo "$GREETING from $(pwd)"; echo to-stderr > /dev/stderr; echo via-dev-stdout > /dev/stdout; echo "parent $PPID"; exit 7',
    ),
  );
  const lines = result.out.toString('utf8').trim().split('\n');
  expect(lines.slice(0, 2)).toEqual(['hi from /', 'via-dev-stdout']);
  expect(result.err).toBe('to-stderr\n');
  expect(result.code).toBe(7);
  // Not this process: the spawn server forked it.
  const parent = Number(lines[2]!.split(' ')[1]);
  expect(parent).not.toBe(process.pid);
  expect(readFileSync(`/proc/${parent}/cmdline`, 'utf8').split('\0').filter(Boolean)).toEqual([
    initPath,
    '-spawn-server',
  ]);
});

test.each(['the spawn server', 'a fork'] as const)(
  'standard output can go to a file the worker made, through %s: appended to, the stream ending at once',
  async (through) => {
    const launcher = through === 'a fork' ? forkLauncher : server.launch;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'spawn-stdout-'));
    try {
      const file = path.join(dir, 'out');
      writeFileSync(file, 'kept\n');
      const launchTo = (target: string) =>
        launcher('/bin/bash', ['-c', 'echo one; echo to-stderr >&2; echo two'], {
          cwd: '/',
          env: { PATH: '/usr/bin:/bin' },
          stdoutFile: target,
        });
      const result = await finished(launchTo(file));
      expect([result.code, result.out.toString('utf8'), result.err]).toEqual([0, '', 'to-stderr\n']);
      // Opened for appending, never truncated: what was there stays.
      expect(readFileSync(file, 'utf8')).toBe('kept\none\ntwo\n');

      // The file must exist, and a link is not followed.
      const started = (target: string) =>
        new Promise<void>((resolve, reject) => {
          try {
            finished(launchTo(target)).then(() => resolve(), reject);
          } catch (err) {
            reject(err as Error);
          }
        });
      await expect(started(path.join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
      writeFileSync(path.join(dir, 'elsewhere'), '');
      symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'link'));
      await expect(started(path.join(dir, 'link'))).rejects.toThrow(/too many levels of symbolic links|ELOOP/i);
      expect(readFileSync(path.join(dir, 'elsewhere'), 'utf8')).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test("runProcess follows a process's output file as it grows, and a file that cannot be opened is its error", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'run-stdout-'));
  try {
    const file = path.join(dir, 'out');
    writeFileSync(file, '');
    const prepared = (script: string): PreparedProcess => ({
      file: '/bin/bash',
      args: ['-c', script],
      env: { PATH: '/usr/bin:/bin' },
      cwd: '/',
      launch: server.launch,
      release: async () => undefined,
    });
    // The process waits to hear its first line was read: only a reader that follows the file gets there.
    const heard: string[] = [];
    const go = path.join(dir, 'go');
    const result = await runProcess({
      prepared: prepared(`echo first; while [ ! -e ${go} ]; do sleep 0.02; done; echo second`),
      timeoutMs: 30_000,
      keepBytes: 4096,
      stdoutFile: file,
      onStdout: (chunk) => {
        heard.push(chunk.toString('utf8'));
        if (heard.join('').includes('first\n')) writeFileSync(go, '');
      },
    });
    expect([result.exitCode, heard.join(''), result.output]).toEqual([0, 'first\nsecond\n', 'first\nsecond\n']);

    await expect(
      runProcess({
        prepared: prepared('echo never'),
        timeoutMs: 30_000,
        keepBytes: 4096,
        stdoutFile: path.join(dir, 'missing', 'out'),
      }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('standard input arrives whole, in order, and a program that stops reading it ends the writes', async () => {
  const input = randomBytes(5 * 1024 * 1024 + 17);
  const child = sh('sha256sum', { stdin: true });
  child.stdin!.end(input);
  const result = await finished(child);
  expect(result.out.toString('utf8').split(' ')[0]).toBe(createHash('sha256').update(input).digest('hex'));

  const early = sh('head -c 10 > /dev/null', { stdin: true });
  const writeFailed = new Promise<unknown>((resolve) => early.stdin!.on('error', resolve));
  early.stdin!.end(randomBytes(8 * 1024 * 1024));
  expect((await finished(early)).code).toBe(0);
  expect(await writeFailed).toMatchObject({ code: 'EPIPE' });
});

test('output a slow reader holds back arrives whole and in order', async () => {
  const child = sh('head -c 20000000 /dev/urandom | tee /dev/stderr | sha256sum');
  const chunks: Buffer[] = [];
  // The reader stops after every chunk: the server holds the output back meanwhile and loses none.
  child.stderr.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    child.stderr.pause();
    setImmediate(() => child.stderr.resume());
  });
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  // Read to its end: 'close' (as Node's) does not wait for a reader that holds output back.
  await Promise.all([
    new Promise((resolve) => child.stderr.once('end', resolve)),
    new Promise((resolve) => child.stdout.once('end', resolve)),
  ]);
  const data = Buffer.concat(chunks);
  expect(data.length).toBe(20_000_000);
  expect(Buffer.concat(out).toString('utf8').split(' ')[0]).toBe(createHash('sha256').update(data).digest('hex'));
});

test('output held back when the process exits is still delivered, and its close follows', async () => {
  // A first chunk fills the reader (16 KiB), which holds the output back; what the server has not
  // read by then, plus a small rest written later, fits in the pipe (64 KiB), so the process exits
  // while its output is held back.
  const child = sh('head -c 65536 /dev/urandom; sleep 0.2; head -c 1000 /dev/urandom');
  expect(child.stdin).toBeNull();
  await new Promise((resolve) => child.once('exit', resolve));
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  await new Promise((resolve) => child.once('close', resolve));
  expect(Buffer.concat(out).length).toBe(66_536);
});

test('output whose reader failed is dropped, not held back: the process finishes and closes', async () => {
  const child = sh('head -c 5000000 /dev/zero; echo finished >&2');
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const failing = new Writable({ write: (_c, _e, callback) => callback(new Error('disk full')) });
  await expect(pipeline(child.stdout, failing)).rejects.toThrow('disk full');
  const code = await new Promise((resolve) => child.once('close', resolve));
  expect(code).toBe(0);
  expect(err).toBe('finished\n');
});

test('a process that does not read its input holds up no other process', async () => {
  const stuck = sh('exec sleep 60', { stdin: true });
  stuck.stdin!.on('error', () => undefined);
  const writeEnded = new Promise<unknown>((resolve) => stuck.stdin!.write(randomBytes(4 * 1024 * 1024), resolve));
  // Its input fills the pipe and waits; meanwhile others start, run and finish.
  for (let i = 0; i < 3; i++) expect((await finished(sh(`echo ${i}`))).out.toString('utf8')).toBe(`${i}\n`);
  stuck.signal('SIGKILL');
  expect(await finished(stuck)).toMatchObject({ signal: 'SIGKILL' });
  expect(await writeEnded).toMatchObject({ code: 'EPIPE' });
});

test('signals reach the process, and its whole group when asked; a missing program is an error', async () => {
  const term = sh('exec sleep 30');
  const termDone = finished(term);
  term.signal('SIGTERM');
  expect(await termDone).toMatchObject({ code: null, signal: 'SIGTERM' });

  const marker = `spawn-group-${randomBytes(4).toString('hex')}`;
  const group = sh(`(exec -a ${marker} sleep 300) & echo started; wait`, { detached: true });
  const groupDone = finished(group);
  await new Promise((resolve) => group.stdout.once('data', resolve));
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the background sleep',
  );
  group.signal('SIGKILL', { group: true });
  expect(await groupDone).toMatchObject({ signal: 'SIGKILL' });
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the group to die',
  );

  const missing = server.launch('/nonexistent/program', [], { cwd: '/', env: {} });
  await expect(finished(missing)).rejects.toMatchObject({ code: 'ENOENT' });
});

test('a server that dies mid-output takes its processes with it, which end as killed; the next process starts a new one', async () => {
  const marker = `spawn-orphan-${randomBytes(4).toString('hex')}`;
  const child = sh(`exec -a ${marker} yes 0123456789abcdef`);
  // Read and dropped: it writes as fast as it can until the server dies.
  const done = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.stdout.resume();
  child.stderr.resume();
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the yes',
  );
  const serverPid = Number(
    readFileSync(`/proc/${hostPidsRunning(marker)[0]}/stat`, 'utf8')
      .split(') ')[1]!
      .split(' ')[1],
  );
  process.kill(serverPid, 'SIGKILL');
  expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' });
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the yes to die with the server',
  );
  // Wherever the dead server's last frame was cut, the new one's frames read whole.
  for (let i = 0; i < 3; i++) {
    const again = await finished(sh(`echo again ${i}; echo err ${i} >&2; exit ${i}`));
    expect(again).toMatchObject({ code: i, err: `err ${i}\n` });
    expect(again.out.toString('utf8')).toBe(`again ${i}\n`);
  }
});

test('the run sandbox starts its commands, and the disk limit its du, through spawn servers, never by forking the worker', async () => {
  // Files measured with du (AGENT_DISK_LIMITS=measure): on a filesystem of its own, a statfs.
  const { processes, sandbox } = await createTestSandbox({ AGENT_DISK_LIMITS: 'measure' });
  const run = await processes('spawn-server-run');
  // The server itself is a child of the worker, started once.
  await run.exec(['/bin/true']);
  const forks = probeSpawns();
  forks.reset();
  const before = SpawnServer.launched;
  const result = await run.runCommand({
    command: 'echo inside; echo err >&2',
    policy: 'none',
    timeoutMs: 30_000,
    keepBytes: 4096,
  });
  expect(result).toMatchObject({ exitCode: 0 });
  expect(result.output).toContain('inside');
  expect(await run.exec(['/bin/sh', '-c', 'cat; echo " and more"'], { input: 'fed' })).toBe('fed and more\n');
  await run.exec(['/bin/sh', '-c', 'head -c 100000 /dev/zero > /workspace/filler']);
  const used = await runDiskQuota(sandbox, 'spawn-server-run', 1024 ** 3).usage();
  expect(used?.bytes).toBeGreaterThanOrEqual(100_000);
  // The run's command sandbox (its server), the command in it, the two helpers, and du.
  expect(SpawnServer.launched - before).toBe(5);
  expect(forks.read().spawns).toBe(0);
});

test('a worker killed with SIGKILL leaves no sandboxed process of its runs behind', async () => {
  const marker = `spawn-worker-${randomBytes(4).toString('hex')}`;
  // A stand-in worker: its own process, a real sandbox, a command that would sleep for minutes.
  const worker = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'fixtures/sandboxed-sleeper.ts'), marker],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise((resolve, reject) => {
    worker.stdout.once('data', resolve);
    worker.once('exit', (code) => reject(new Error(`the stand-in worker exited (${code}) before its command started`)));
  });
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 1,
    'the sandboxed sleep',
  );
  worker.kill('SIGKILL');
  await waitFor(
    async () => hostPidsRunning(marker).length,
    (n) => n === 0,
    'the sandboxed sleep to die with its worker',
  );
});
