import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Client } from 'pg';
import supertest from 'supertest';
import { embeddedPostgresUrl } from '../infra/embedded-postgres';
import { EMBEDDED_DATABASE } from '../infra/runtime';
import { freePort } from './helpers/free-port';
import { gate, ScriptedModelServer } from './helpers/scripted-model';
import { uniqueName, waitFor } from './helpers/test-context';
import { unmountUnder } from './stack/temp-root';

const ROOT = path.resolve(__dirname, '..');

jest.setTimeout(180_000);

/** One `npm start` (bin/start.ts) in its own process group, with its stdout split into lines. */
interface Service {
  name: string;
  proc: ChildProcess;
  pgid: number;
  spawnedAt: number;
  lines: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Processes seen to belong to this service (see trackProcesses). */
  known: Set<string>;
  /** Resolves with the index of the first stdout line (already seen or to come) that matches. */
  waitForLine(match: (line: string, index: number) => boolean, timeoutMs: number, what: string): Promise<number>;
}

const services: Service[] = [];
let model: ScriptedModelServer;
let dataDir: string;
let env: NodeJS.ProcessEnv;
let baseUrl: string;

beforeAll(async () => {
  model = new ScriptedModelServer();
  const modelUrl = await model.start();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-restart-'));
  // PostgreSQL runs as the `postgres` user when the tests run as root: it must reach its data dir.
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  env = {
    ...process.env,
    AGENT_RUNS_DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_DEV_HTTP_PORT: String(await freePort()),
    TEMPORAL_DEV_METRICS_PORT: String(await freePort()),
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: modelUrl,
    AGENT_DEFAULT_MODEL: 'openai/test-model',
    ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3',
    // Empty means unset: everything embedded, under the data dir.
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
  };
});

afterAll(async () => {
  try {
    for (const service of services) await stopService(service);
  } finally {
    await model?.stop();
    // The runs' filesystems a killed service left mounted (AGENT_DISK_LIMITS=enforce) go first.
    if (dataDir) unmountUnder(dataDir);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
});

function startService(name: string): Service {
  const spawnedAt = Date.now();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bin/start.ts'], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error('could not spawn bin/start.ts');
  const lines: string[] = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const l of [...listeners]) l();
  });
  proc.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const service: Service = {
    name,
    proc,
    pgid: proc.pid,
    spawnedAt,
    lines,
    stderr,
    exited,
    known: new Set(),
    waitForLine(match, timeoutMs, what) {
      return new Promise<number>((resolve, reject) => {
        const check = () => {
          const index = lines.findIndex((line, i) => match(line, i));
          if (index < 0) return;
          done();
          resolve(index);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; ${dump(service)}`));
        }, timeoutMs);
        const onExit = () => {
          done();
          reject(new Error(`bin/start.ts exited while waiting for ${what}; ${dump(service)}`));
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
          proc.off('exit', onExit);
        };
        listeners.add(check);
        proc.once('exit', onExit);
        check();
        if (proc.exitCode !== null || proc.signalCode !== null) onExit();
      });
    },
  };
  services.push(service);
  return service;
}

function dump(service: Service): string {
  return `${service.name} (pid ${service.pgid}) stdout:\n${service.lines.join('\n')}\nstderr (tail):\n${service.stderr.join('').slice(-4000)}`;
}

interface ProcessEntry {
  /** pid and start time: a pid the kernel hands out again is another process. */
  id: string;
  pid: number;
  ppid: number;
  pgrp: number;
  /** Dead, but not yet reaped by its parent (or by init, for an orphan). */
  zombie: boolean;
}

/** Every process in /proc, zombies included. */
function processTable(): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // reaped while we looked
    }
    // After "pid (comm) ": state, ppid, pgrp, ... with the start time 20th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    entries.push({
      id: `${name}@${fields[19]}`,
      pid: Number(name),
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      zombie: fields[0] === 'Z',
    });
  }
  return entries;
}

/**
 * Remembers every process of the service: its process group and every descendant of bin/start.ts.
 * PostgreSQL's server processes call setsid(), so they are not in the group that `kill -<pgid>` reaches.
 */
function trackProcesses(service: Service): void {
  const table = processTable();
  const tree = new Set<number>([service.pgid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table) {
      if (!tree.has(p.pid) && (tree.has(p.ppid) || p.pgrp === service.pgid)) {
        tree.add(p.pid);
        grew = true;
      }
    }
  }
  for (const p of table) if (tree.has(p.pid)) service.known.add(p.id);
}

/** The service's processes still in the process table: its group, and those seen by trackProcesses. */
function remainingProcesses(service: Service): ProcessEntry[] {
  return processTable().filter((p) => p.pgrp === service.pgid || service.known.has(p.id));
}

/**
 * Waits until no process of the service is left, not even as a zombie: a killed postmaster that
 * init has not reaped yet still "runs" for PostgreSQL (kill(pid, 0) succeeds), and a restart
 * on the same data dir would refuse to start because of its postmaster.pid.
 */
async function waitForProcessesGone(service: Service, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => remainingProcesses(service).map((p) => `${p.pid}${p.zombie ? ' (zombie)' : ''}`),
    (pids) => pids.length === 0,
    `every process of bin/start.ts (group ${service.pgid}) to be gone`,
    timeoutMs,
  );
}

/** What kill(-pgid, 0) says: 'ESRCH' once no process of the group is left, zombies included. */
function groupProbe(pgid: number): string {
  try {
    process.kill(-pgid, 0);
    return 'exists';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err);
  }
}

/** Stops a service gracefully (SIGTERM to bin/start.ts), and kills whatever is left of it if that fails. */
async function stopService(service: Service): Promise<void> {
  trackProcesses(service);
  if (remainingProcesses(service).length === 0) return;
  if (service.proc.exitCode === null && service.proc.signalCode === null) service.proc.kill('SIGTERM');
  try {
    await waitForProcessesGone(service, 30_000);
  } catch {
    for (const p of remainingProcesses(service)) {
      try {
        if (!p.zombie) process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone in the meantime
      }
    }
    await waitForProcessesGone(service, 10_000);
  }
}

/** Resolves with `promise`, or rejects at the deadline or when the service exits first. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string, service: Service): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; ${dump(service)}`)),
      timeoutMs,
    );
  });
  const died = service.exited.then(({ code, signal }) => {
    throw new Error(`bin/start.ts exited (${signal ?? code}) while waiting for ${what}; ${dump(service)}`);
  });
  try {
    return await Promise.race([promise, deadline, died]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitForReady(service: Service): Promise<number> {
  await service.waitForLine((line) => /^Ready in \d+(\.\d+)?s\.$/.test(line), 150_000, 'the "Ready in" line');
  return Date.now() - service.spawnedAt;
}

const userMessages = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === 'user').map((m) => m.content);

async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({
    connectionString: embeddedPostgresUrl(
      path.join(dataDir, 'postgres'),
      Number(env.EMBEDDED_POSTGRES_PORT),
      EMBEDDED_DATABASE,
    ),
  });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

test('kill -9 of the whole `npm start` group mid-run, then a restart on the same data dir: both runs finish, nothing is lost or repeated', async () => {
  const api = supertest(baseUrl);

  // First start: a fresh data dir, so the service creates its one personal key.
  const first = startService('first start');
  const firstReadyMs = await waitForReady(first);
  const firstStart = await first.waitForLine((l) => l.startsWith('First start'), 30_000, 'the "First start" line');
  const keyIndex = await first.waitForLine((_l, i) => i === firstStart + 1, 30_000, 'the API key');
  const key = first.lines[keyIndex]!;
  expect(key).toMatch(/^ark_[A-Za-z0-9_-]+$/);
  expect(first.lines).toContain(`Agent runs API:  http://localhost:${env.PORT}/api/v1`);
  const auth = { Authorization: `Bearer ${key}` };

  const release = gate<void>();
  const markerA = uniqueName('restart-a');
  const markerB = uniqueName('restart-b');
  const promptA = `Migrate the schema ${markerA}`;
  const promptB = `Write the changelog ${markerB}`;
  const followupMessage = `Also update the docs ${uniqueName('followup')}`;
  // Every call is held until the test lets the model go (after the restart).
  model.script(markerA, (_req, call) => ({ hold: release.promise.then(() => ({ text: `A reply ${call}` })) }));
  model.script(markerB, (_req, call) => ({ hold: release.promise.then(() => ({ text: `B reply ${call}` })) }));

  const createdA = await api.post('/api/v1/agent/runs').set(auth).send({ prompt: promptA });
  expect(createdA.status).toBe(201);
  const runA = createdA.body.run_id as string;
  await within(model.waitForCalls(markerA, 1), 60_000, 'run A’s model call', first);
  expect((await api.get(`/api/v1/agent/runs/${runA}`).set(auth)).body.state).toBe('INPROGRESS');

  const createdB = await api.post('/api/v1/agent/runs').set(auth).send({ prompt: promptB });
  expect(createdB.status).toBe(201);
  const runB = createdB.body.run_id as string;
  await within(model.waitForCalls(markerB, 1), 60_000, 'run B’s model call', first);
  expect((await api.get(`/api/v1/agent/runs/${runB}`).set(auth)).body.state).toBe('INPROGRESS');

  const followup = await api.post(`/api/v1/agent/runs/${runA}/followups`).set(auth).send({ message: followupMessage });
  expect(followup.status).toBe(200);
  expect(followup.body).toEqual({
    run_id: runA,
    state: 'INPROGRESS',
    followup_id: expect.any(String),
    outcome: 'live_session',
  });

  // kill -9 of everything `npm start` runs: the node process, PostgreSQL and the Temporal dev server.
  trackProcesses(first);
  const group = processTable().filter((p) => p.pgrp === first.pgid);
  expect(group.length).toBeGreaterThanOrEqual(3);
  const outsideGroup = first.known.size - group.length;
  const killedAt = Date.now();
  process.kill(-first.pgid, 'SIGKILL');
  expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
  // Dead at once; gone (reaped by init, which adopted the orphans) a little later.
  await waitFor(
    async () => remainingProcesses(first).filter((p) => !p.zombie),
    (alive) => alive.length === 0,
    `every process of group ${first.pgid} to die`,
    30_000,
  );
  const allDeadMs = Date.now() - killedAt;
  await waitForProcessesGone(first, 30_000);
  expect(groupProbe(first.pgid)).toBe('ESRCH');
  const allGoneMs = Date.now() - killedAt;
  await waitFor(
    async () => model.aborted,
    (aborted) => aborted.includes(markerA) && aborted.includes(markerB),
    'both held model requests to be dropped by the kill',
    10_000,
  );

  // Second start on the same data dir and ports.
  const second = startService('restart');
  const secondReadyMs = await waitForReady(second);
  // The runs come back as they were: in progress, not re-queued or ended.
  for (const id of [runA, runB]) {
    expect((await api.get(`/api/v1/agent/runs/${id}`).set(auth)).body.state).toBe('INPROGRESS');
  }

  // Both runs' model steps are retried on the new worker; then the model answers.
  await within(model.waitForCalls(markerA, 2), 90_000, 'run A’s retried model call', second);
  await within(model.waitForCalls(markerB, 2), 90_000, 'run B’s retried model call', second);
  release.release();

  const finished = await within(
    waitFor(
      async () =>
        Promise.all(
          [runA, runB].map(
            async (id) => (await api.get(`/api/v1/agent/runs/${id}`).set(auth)).body as { state: string },
          ),
        ),
      (runs) => runs.every((r) => ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(r.state)),
      'runs A and B to end',
      90_000,
    ),
    95_000,
    'runs A and B to end',
    second,
  );
  const recoveredMs = Date.now() - killedAt;
  expect(finished.map((r) => r.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);

  console.log(
    [
      `npm start: first start ready after ${firstReadyMs} ms (spawn → "Ready in"; it printed "${first.lines.find((l) => l.startsWith('Ready in'))}")`,
      `npm start: restart after kill -9 ready after ${secondReadyMs} ms (it printed "${second.lines.find((l) => l.startsWith('Ready in'))}")`,
      `npm start: kill -9 of group ${first.pgid} (${group.length} processes; ${outsideGroup} more of PostgreSQL outside it): all dead after ${allDeadMs} ms, all reaped after ${allGoneMs} ms`,
      `npm start: both runs SUCCEEDED ${recoveredMs} ms after the kill`,
    ].join('\n'),
  );

  // A: the prompt alone before the kill; after it, the prompt then the follow-up, once.
  const callsA = model.calls(markerA);
  expect(userMessages(callsA[0]!.messages)).toEqual([promptA]);
  for (const call of callsA.slice(1)) {
    expect(userMessages(call.messages)).toEqual([promptA, followupMessage]);
    expect(call.messages.filter((m) => m.role === 'assistant')).toEqual([]);
  }
  for (const call of model.calls(markerB)) expect(userMessages(call.messages)).toEqual([promptB]);

  const eventsA = await query<{ kind: string; payload: Record<string, unknown> }>(
    `SELECT kind, payload FROM run_events WHERE run_id = $1 ORDER BY id`,
    [runA],
  );
  const followupsA = eventsA.filter((e) => e.kind === 'followup');
  expect(followupsA.map((e) => e.payload.message)).toEqual([followupMessage]);
  const kindsA = eventsA.map((e) => e.kind);
  expect(kindsA.indexOf('prompt')).toBeLessThan(kindsA.indexOf('followup'));
  expect(kindsA.indexOf('followup')).toBeLessThan(kindsA.indexOf('assistant'));
  expect(eventsA.filter((e) => e.kind === 'assistant')).toHaveLength(1);
  for (const runId of [runA, runB]) {
    const states = await query<{ state: string }>(
      `SELECT payload->>'state' AS state FROM run_events WHERE run_id = $1 AND kind = 'state' ORDER BY id`,
      [runId],
    );
    expect(states.map((s) => s.state)).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED']);
  }
  expect(await query(`SELECT id FROM followups WHERE run_id = $1 AND delivered_at IS NULL`, [runA])).toEqual([]);

  // The restart kept the data: the first key still works and no new key was made or printed.
  expect(await query<{ count: number }>(`SELECT count(*)::int AS count FROM api_keys`)).toEqual([{ count: 1 }]);
  expect(second.lines.some((l) => l.startsWith('First start') || /^ark_/.test(l))).toBe(false);

  const ready = await api.get('/readyz');
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual({
    status: 'ready',
    accepts_runs: true,
    checks: { database: 'ok', temporal: 'ok', worker: 'ok' },
    run_limits: expect.stringMatching(/^cgroup v[12] \(memory 4096 MiB, 512 processes/),
    // The CLIs are dependencies of the service: every harness is offered, each with its version.
    harnesses: {
      oz: 'built in',
      claude: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      codex: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      gemini: expect.stringMatching(/^\d+\.\d+\.\d+$/),
    },
  });
});
