import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './helpers/free-port';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { killWorker, spawnWorker, waitUntilPolling, within, type WorkerChild } from './helpers/worker-processes';

/**
 * A worker that gets SIGTERM (a deploy, a scale-down) drains: it says so on /readyz, lets the
 * step in flight finish (its command is not restarted), refuses the run's next step so that the
 * run goes on at once on another worker from its checkpoint, and exits without waiting out
 * WORKER_DRAIN_SECONDS.
 */

let ctx: TestContext;
const workers: WorkerChild[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ worker: false, env: { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3' } });
});
afterEach(async () => {
  for (const w of workers.splice(0)) await killWorker(w);
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(180_000);

/** A worker with a workspace directory of its own (another machine), WORKER_DRAIN_SECONDS=120. */
function machine(env: Record<string, string> = {}): { worker: WorkerChild; dir: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-drain-'));
  const worker = spawnWorker(ctx, { workspaceDir: dir, env: { WORKER_DRAIN_SECONDS: '120', ...env } });
  workers.push(worker);
  return { worker, dir };
}

test('SIGTERM drains: the step in flight finishes, the next goes on elsewhere at once from the checkpoint, the worker exits', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('drain');
  ctx.model.script(marker, (_req, call) => {
    const commands = [
      'echo one > first.txt; touch started; while [ ! -e go ]; do sleep 0.1; done; echo "step one done"',
      'cat first.txt; ls',
    ];
    return call <= commands.length
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: commands[call - 1]! } }] }
      : { text: `done ${marker}` };
  });
  const port = await freePort();
  const a = machine({ WORKER_METRICS_PORT: String(port) });
  await waitUntilPolling(ctx, a.worker, 'worker A');
  const runId = await createRun(ctx, key, { prompt: `Drain ${marker}` });
  await waitFor(async () => existsSync(path.join(a.dir, runId, 'started')), Boolean, 'step 1 to run on A', 60_000);
  const b = machine();
  await waitUntilPolling(ctx, b.worker, 'worker B');

  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { status: res.status, body: (await res.json()) as { status: string } };
  };
  expect(await readyz()).toEqual({ status: 200, body: { status: 'ok' } });
  a.worker.proc.kill('SIGTERM');
  await waitFor(readyz, (r) => r.status === 503, 'A to say it drains', 10_000);
  expect(await readyz()).toEqual({ status: 503, body: { status: 'draining' } });
  // Alive all the while (not to be killed early), saying which state it is in.
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: 'draining' } });

  // The step in flight finishes on A; A then exits by itself, long before its 120 s.
  const released = Date.now();
  writeFileSync(path.join(a.dir, runId, 'go'), '');
  const exit = await within(a.worker.exited, 60_000, 'A to exit after its step', a.worker);
  const exitedAfterMs = Date.now() - released;
  expect(exit).toEqual({ code: 0, signal: null });

  const done = await within(
    waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR'], undefined, 90_000),
    95_000,
    'the run to end on B',
    b.worker,
  );
  const endedAfterMs = Date.now() - released;
  console.log(
    `drain: worker A exited ${exitedAfterMs} ms after its step was let go; the run ended on B ${endedAfterMs} ms after (WORKER_LEASE_SECONDS=${ctx.config.worker.leaseSeconds})`,
  );
  expect(done.state).toBe('SUCCEEDED');
  const events = await transcript(ctx, runId);
  const outputs = events.filter((e) => e.kind === 'tool_call').map((e) => String(e.payload.output));
  // Step 1 ran once, to its end, on A; step 2 on B found its file.
  expect(outputs).toHaveLength(2);
  expect(outputs[0]).toContain('step one done');
  expect(outputs[1]).toContain('one');
  expect(existsSync(path.join(b.dir, runId, 'first.txt'))).toBe(true);
  const notices = events.filter((e) => e.kind === 'notice').map((e) => String(e.payload.message));
  expect(notices.join('\n')).not.toMatch(/interrupted/);
  expect(notices.join('\n')).toContain("the run's files as its checkpoint after step 1 of turn 1 left them");
});

test('a rolling restart of two workers under 20 runs in flight loses no step and runs no command twice', async () => {
  const { key } = await ctx.newTeamKey();
  // Four steps that each append their number (a command run twice would append it twice), then a
  // look; a script per run (a script counts the calls of every run that names its marker).
  const markers = Array.from({ length: 20 }, () => uniqueName('rolling'));
  for (const marker of markers)
    ctx.model.script(marker, (_req, call) => {
      if (call <= 4)
        return {
          text: '',
          toolCalls: [{ name: 'run_command', arguments: { command: `echo ${call} >> steps.log; sleep 1` } }],
        };
      if (call === 5)
        return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'cat steps.log' } }] };
      return { text: `done ${marker}` };
    });
  const dirs = [0, 1].map(() => mkdtempSync(path.join(os.tmpdir(), 'agent-runs-rolling-')));
  const ids = [uniqueName('rolling-a'), uniqueName('rolling-b')];
  const start = (i: number) => {
    const worker = spawnWorker(ctx, { workspaceDir: dirs[i], workerId: ids[i], env: { WORKER_DRAIN_SECONDS: '120' } });
    workers.push(worker);
    return worker;
  };
  const running = [start(0), start(1)];
  for (const i of [0, 1]) await waitUntilPolling(ctx, running[i]!, `worker ${i}`);
  const runIds = await Promise.all(
    markers.map((marker, i) => createRun(ctx, key, { prompt: `Rolling ${i} ${marker}` })),
  );
  await waitFor(
    async () =>
      (await Promise.all(runIds.map((id) => transcript(ctx, id)))).filter((t) => t.some((e) => e.kind === 'tool_call'))
        .length,
    (stepping) => stepping >= 4,
    'runs to be mid-steps',
    120_000,
  );

  // One worker at a time: SIGTERM, it drains and exits 0, it comes back with its name and disk.
  for (const i of [0, 1]) {
    running[i]!.proc.kill('SIGTERM');
    expect(await within(running[i]!.exited, 150_000, `worker ${i} to drain`, running[i]!)).toEqual({
      code: 0,
      signal: null,
    });
    running[i] = start(i);
    await waitUntilPolling(ctx, running[i]!, `worker ${i} again`);
  }

  let handedOver = 0;
  for (const runId of runIds) {
    const run = await waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], undefined, 240_000);
    expect(run.state).toBe('SUCCEEDED');
    const events = await transcript(ctx, runId);
    const outputs = events.filter((e) => e.kind === 'tool_call').map((e) => String(e.payload.output).trim());
    // Every step once, each command once, in order, whichever worker ran it.
    expect(outputs).toHaveLength(5);
    expect(outputs[4]).toMatch(/(^|\n)1\n2\n3\n4$/);
    const notices = events.filter((e) => e.kind === 'notice').map((e) => String(e.payload.message));
    expect(notices.join('\n')).not.toMatch(/interrupted/);
    if (notices.some((n) => n.includes("the run's files as its checkpoint after step"))) handedOver++;
  }
  // The restarts did meet runs mid-way: some went on on the other worker from a checkpoint.
  expect(handedOver).toBeGreaterThan(0);
  console.log(`rolling restart of 2 workers under 20 runs: ${handedOver} runs handed over mid-run, none lost a step`);
}, 480_000);
