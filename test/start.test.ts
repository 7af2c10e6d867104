import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { Client } from 'pg';
import { portProblem } from '../infra/port-check';
import { freePort } from './helpers/free-port';
import { hasExited } from './helpers/host-processes';

/**
 * `npm start` as a newcomer meets it: the whole service from an empty data directory, a second
 * start on the same directory refused at once, and Ctrl-C (SIGINT to the whole process group,
 * the embedded PostgreSQL included) ending it without alarming warnings.
 */
const ROOT = path.resolve(__dirname, '..');
let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-start-'));
  // PostgreSQL runs as the `postgres` user when the tests run as root: it must reach its data dir.
  chmodSync(dataDir, 0o755);
});
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

async function start(env: Record<string, string>, dir = dataDir): Promise<Started> {
  // A process group of its own, as a terminal gives `npm start`: Ctrl-C signals all of it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/start.ts'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, AGENT_RUNS_DATA_DIR: dir, LOG_FORMAT: 'json', ...env },
  });
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

async function until(started: Started, pattern: RegExp, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  let done = false;
  void started.exited.then(() => (done = true));
  while (!pattern.test(started.output())) {
    if (done || Date.now() > deadline) throw new Error(`no ${what}; output:\n${started.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function ports(): Promise<Record<string, string>> {
  return {
    PORT: String(await freePort()),
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_DEV_HTTP_PORT: String(await freePort()),
    TEMPORAL_DEV_METRICS_PORT: String(await freePort()),
    WORKER_METRICS_PORT: '0',
  };
}

test('npm start: ready from an empty directory, its namespace keeping histories RUN_RETENTION_DAYS, a second instance refused at once, Ctrl-C quiet', async () => {
  const env: Record<string, string> = { ...(await ports()), RUN_RETENTION_DAYS: '9' };
  const first = await start(env);
  try {
    await until(first, /Ready in/, 'ready line');
    expect(first.output()).toMatch(/First start: created a personal admin API key/);
    // The database URL it prints is one another process on this machine can use.
    const printed = /^Database: +DATABASE_URL=(.+)$/m.exec(first.output())![1]!;
    const url = printed.replace(/\$\(cat ([^)]+)\)/, (_m, file: string) => readFileSync(file, 'utf8').trim());
    const client = new Client({ connectionString: url });
    await client.connect();
    expect((await client.query('SELECT count(*)::int AS keys FROM api_keys')).rows).toEqual([{ keys: 1 }]);
    await client.end();
    expect(first.output()).toMatch(
      new RegExp(`^Temporal: +TEMPORAL_ADDRESS=127\\.0\\.0\\.1:${env.TEMPORAL_DEV_PORT}$`, 'm'),
    );
    const temporal = await Connection.connect({ address: `127.0.0.1:${env.TEMPORAL_DEV_PORT}` });
    const { config } = await temporal.workflowService.describeNamespace({ namespace: 'default' });
    await temporal.close();
    expect(Number(config!.workflowExecutionRetentionTtl!.seconds)).toBe(9 * 86_400);
    const landing = await fetch(`http://127.0.0.1:${env.PORT}/`);
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain(`href="http://localhost:${env.TEMPORAL_UI_PORT}"`);

    // Other ports, the same directory: refused before anything starts, naming the holder.
    const secondStarted = Date.now();
    const second = await start(await ports());
    expect(await second.exited).toBe(1);
    expect(Date.now() - secondStarted).toBeLessThan(15_000);
    expect(second.output()).toContain(`is using AGENT_RUNS_DATA_DIR=${dataDir}`);
    expect(second.output()).toContain(`pid ${first.child.pid}`);
    expect(second.output()).not.toMatch(/port/i);

    // Ctrl-C: SIGINT to the process group.
    const before = first.output().length;
    process.kill(-first.child.pid!, 'SIGINT');
    expect(await first.exited).toBe(0);
    const shutdown = first.output().slice(before);
    expect(shutdown).toContain('Shutting down...');
    expect(shutdown).not.toMatch(/"level":"(warn|error)"/);
  } finally {
    if (first.child.exitCode === null) process.kill(-first.child.pid!, 'SIGKILL');
  }

  // The lock went with it: the directory starts again (and the key exists already).
  const again = await start(await ports());
  try {
    await until(again, /Ready in/, 'ready line on the second start');
    expect(again.output()).not.toMatch(/First start/);
    process.kill(-again.child.pid!, 'SIGINT');
    expect(await again.exited).toBe(0);
  } finally {
    if (again.child.exitCode === null) process.kill(-again.child.pid!, 'SIGKILL');
  }
}, 300_000);

function pidIn(file: string): number {
  return Number(readFileSync(file, 'utf8').split('\n')[0]);
}

async function awaitExit(pid: number, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!hasExited(pid)) {
    if (Date.now() > deadline) throw new Error(`${what} (pid ${pid}) still runs`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('npm start killed with SIGKILL: its PostgreSQL and Temporal dev server die with it, and start again', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-start-kill-'));
  chmodSync(dir, 0o755);
  try {
    const env = await ports();
    const first = await start(env, dir);
    await until(first, /Ready in/, 'ready line');
    const postgres = pidIn(path.join(dir, 'postgres', 'pgdata', 'postmaster.pid'));
    const temporal = pidIn(path.join(dir, 'temporal.pid'));
    expect([hasExited(postgres), hasExited(temporal)]).toEqual([false, false]);

    // Only the parent: no exit handler of it runs, and no signal reaches its children from us.
    process.kill(first.child.pid!, 'SIGKILL');
    await first.exited;
    await awaitExit(postgres, 'PostgreSQL');
    await awaitExit(temporal, 'the Temporal dev server');
    expect(await portProblem(Number(env.EMBEDDED_POSTGRES_PORT), '127.0.0.1')).toBeNull();
    expect(await portProblem(Number(env.TEMPORAL_DEV_PORT), '127.0.0.1')).toBeNull();

    // The same ports and directory start again at once.
    const again = await start(env, dir);
    await until(again, /Ready in/, 'ready line after the kill');
    process.kill(-again.child.pid!, 'SIGINT');
    expect(await again.exited).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);

test('a start finds the PostgreSQL and Temporal dev server a dead instance left running, stops them and starts', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-start-left-'));
  chmodSync(dir, 0o755);
  const env = await ports();
  const left = spawn(process.execPath, ['--import', 'tsx', 'test/stack/leftover-servers.ts'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, DATABASE_URL: '', TEMPORAL_ADDRESS: '', AGENT_RUNS_DATA_DIR: dir, ...env },
  });
  const leftExited = new Promise<void>((resolve) => left.once('exit', () => resolve()));
  let next: Started | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      left.stdout!.once('data', () => resolve());
      left.once('exit', (code) => reject(new Error(`leftover servers exited with ${code}`)));
    });
    const postgres = pidIn(path.join(dir, 'postgres', 'pgdata', 'postmaster.pid'));
    const temporal = pidIn(path.join(dir, 'temporal.pid'));
    next = await start(env, dir);
    await until(next, /Ready in/, 'ready line over the leftovers');
    expect(next.output()).toContain(`Stopping the PostgreSQL (pid ${postgres}) that a previous start left running`);
    expect(next.output()).toContain(
      `Stopping the Temporal dev server (pid ${temporal}) that a previous start left running`,
    );
    expect([hasExited(postgres), hasExited(temporal)]).toEqual([true, true]);
    process.kill(-next.child.pid!, 'SIGINT');
    expect(await next.exited).toBe(0);
  } finally {
    if (next && next.child.exitCode === null) process.kill(-next.child.pid!, 'SIGKILL');
    left.stdin!.end();
    await leftExited;
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
