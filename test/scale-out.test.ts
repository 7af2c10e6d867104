import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isUuid } from '../core/ids';
import { spawnApi } from './helpers/api-processes';
import { auth, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, waitUntilPolling, within, type WorkerChild } from './helpers/worker-processes';

/**
 * The deployment of "Deploying at scale" on one machine: two API processes and two worker
 * processes on one PostgreSQL and one Temporal. Load spreads; a worker killed mid-step leaves its
 * runs to the other and, when it comes back, nothing on its disk; an API killed mid-create
 * leaves no run anybody sees, and the client's retry gets the one run.
 */
jest.setTimeout(240_000);

let ctx: TestContext;
const children: ChildProcess[] = [];
const workers: WorkerChild[] = [];
beforeAll(async () => {
  // The first API (in this process); the heartbeat timeout is what notices a dead worker.
  ctx = await createTestContext({ worker: false, env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3' } });
});
afterAll(async () => {
  for (const w of workers) await killWorker(w);
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await ctx?.close();
});

/** A TCP relay to Temporal that can hold everything a client sends (a partition, as the client sees it). */
async function pausableRelay(target: string): Promise<{ address: string; pause(): void; close(): void }> {
  const [host, port] = [target.split(':')[0]!, Number(target.split(':')[1])];
  let paused = false;
  const held: (() => void)[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    client.on('data', (chunk) => (paused ? held.push(() => upstream.write(chunk)) : upstream.write(chunk)));
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    pause: () => (paused = true),
    close: () => server.close(),
  };
}

/** The second API, a process as production runs it, talking to Temporal through `temporalAddress`. */
async function spawnSecondApi(temporalAddress: string) {
  const api = await spawnApi(ctx, { TEMPORAL_ADDRESS: temporalAddress });
  children.push(api.proc);
  return api;
}

const post = (baseUrl: string, key: string, body: object, idempotencyKey?: string) =>
  fetch(`${baseUrl}/api/v1/agent/runs`, {
    method: 'POST',
    headers: {
      ...auth(key),
      'Content-Type': 'application/json',
      ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  });

/** Run directories (and their bytes) left on a worker's disk. */
function runDirs(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter(isUuid) : [];
}

test('two APIs and two workers: load spreads, a dead worker leaves its runs to the other and a clean disk when it returns', async () => {
  const { key } = await ctx.newTeamKey();
  const relay = await pausableRelay(ctx.stack.temporalAddress);
  const api2 = await spawnSecondApi(relay.address);
  const dirs = [0, 1].map(() => mkdtempSync(path.join(os.tmpdir(), 'agent-runs-ws-scale-')));
  const ids = [uniqueName('worker-a'), uniqueName('worker-b')];
  const sweepFast = { WORKSPACE_SWEEP_INTERVAL_SECONDS: '1', WORKSPACE_SCHEDULE_TO_START_SECONDS: '5' };
  for (const i of [0, 1]) {
    workers[i] = spawnWorker(ctx, { workspaceDir: dirs[i], workerId: ids[i], env: sweepFast });
  }
  for (const i of [0, 1]) await waitUntilPolling(ctx, workers[i]!, `worker ${ids[i]}`);

  // Spread: runs created at once through both APIs land on both workers. (One at a time, each
  // provisioning task can go to the worker that just asked again for one: all to one worker.)
  const marker = uniqueName('spread');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const created = await Promise.all(
    Array.from({ length: 12 }, async (_, i) => {
      const res = await post(i % 2 ? api2.baseUrl : ctx.baseUrl, key, {
        prompt: `Spread ${i} ${marker}`,
        config: { idle_timeout_minutes: 0 },
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { run_id: string }).run_id;
    }),
  );
  const holders = new Set<string>();
  for (const runId of created) {
    const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
    holders.add(String(run.worker_id));
  }
  expect([...holders].sort()).toEqual([...ids].sort());

  // A run mid-command on one worker; that worker is killed.
  const blocking = uniqueName('blocking');
  ctx.model.script(blocking, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            {
              name: 'run_command',
              arguments: { command: 'echo ran >> runs.count; touch started; while [ ! -f go ]; do sleep 0.1; done' },
            },
          ],
        }
      : { text: 'all done' },
  );
  const res = await post(ctx.baseUrl, key, { prompt: `Block ${blocking}`, config: { idle_timeout_minutes: 0 } });
  const runId = ((await res.json()) as { run_id: string }).run_id;
  const holder = await waitFor(
    async () => ids.findIndex((id, i) => id && existsSync(path.join(dirs[i]!, runId, 'started'))),
    (i) => i >= 0,
    'the command to start on one worker',
    60_000,
  );
  const other = 1 - holder;
  expect(readFileSync(path.join(dirs[holder]!, runId, 'runs.count'), 'utf8')).toBe('ran\n');
  const killedAt = Date.now();
  await killWorker(workers[holder]!);

  const finished = await within(
    waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000),
    125_000,
    'the run to finish on the other worker',
    workers[other]!,
  );
  const recoveryMs = Date.now() - killedAt;
  expect(finished.worker_id).toBe(ids[other]);
  // The interrupted command did not run again in the new workspace.
  expect(existsSync(path.join(dirs[other]!, runId, 'runs.count'))).toBe(false);
  const notices = (await transcript(ctx, runId))
    .filter((e) => e.kind === 'notice')
    .map((e) => String(e.payload.message));
  expect(notices.join('\n')).toContain(`The new workspace is on worker ${ids[other]}.`);

  // The killed worker comes back with the same WORKER_ID and directory: one sweep, and its disk is clean.
  expect(runDirs(dirs[holder]!)).toContain(runId);
  const returned = spawnWorker(ctx, { workspaceDir: dirs[holder], workerId: ids[holder], env: sweepFast });
  workers.push(returned);
  await waitUntilPolling(ctx, returned, 'the returning worker');
  await waitFor(
    async () => runDirs(dirs[holder]!),
    (left) => left.length === 0,
    'the returning worker to sweep',
    30_000,
  );
  expect(existsSync(path.join(dirs[holder]!, runId))).toBe(false);
  console.log(
    `scale-out: ${created.length} runs over 2 APIs and 2 workers; a worker killed mid-command: its run finished on the other ${(recoveryMs / 1000).toFixed(1)} s later; the returning worker left 0 run directories`,
  );
  relay.close();
});

test('an API killed after its create committed and before the workflow started: no phantom run is listed; the retry gets the one run', async () => {
  const { key } = await ctx.newTeamKey();
  const relay = await pausableRelay(ctx.stack.temporalAddress);
  const api2 = await spawnSecondApi(relay.address);
  const worker = spawnWorker(ctx, { workerId: uniqueName('worker-c') });
  workers.push(worker);
  await waitUntilPolling(ctx, worker, 'the worker');
  const marker = uniqueName('cut-off');
  ctx.model.script(marker, () => ({ text: 'made it' }));
  const body = { prompt: `Cut off ${marker}`, config: { idle_timeout_minutes: 0 } };
  const idempotencyKey = uniqueName('retry');

  // Temporal stops hearing from the second API; its create commits, then waits for the start.
  relay.pause();
  const answer = post(api2.baseUrl, key, body, idempotencyKey).then(
    (r) => r.status,
    () => 0,
  );
  const [row] = await waitFor(
    () =>
      ctx.dataSource.query(`SELECT run_id, workflow_started FROM runs WHERE prompt = $1`, [body.prompt]) as Promise<
        { run_id: string; workflow_started: boolean }[]
      >,
    (rows) => rows.length === 1,
    'the create to commit',
  );
  expect(row!.workflow_started).toBe(false);
  api2.proc.kill('SIGKILL');
  expect(await answer).toBe(0);

  // Nobody sees it: not listed, by either API.
  const listed = await ctx.api.get('/api/v1/agent/runs').set(auth(key));
  expect(listed.body.runs).toEqual([]);

  // The client retries with the same key through the other API: the one run, started now.
  const retry = await post(ctx.baseUrl, key, body, idempotencyKey);
  expect(retry.status).toBe(201);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(((await retry.json()) as { run_id: string }).run_id).toBe(row!.run_id);
  await waitForState(ctx, key, row!.run_id, ['SUCCEEDED'], undefined, 60_000);
  expect(
    ((await ctx.api.get('/api/v1/agent/runs').set(auth(key))).body.runs as { run_id: string }[]).map((r) => r.run_id),
  ).toEqual([row!.run_id]);
  expect((await getRun(ctx, key, row!.run_id)).worker_id).toBeDefined();
  relay.close();
});
