/**
 * Benchmark: what one agent step costs, against the floors Temporal and the sandbox set, on one
 * self-contained stack (embedded PostgreSQL, Temporal dev server, the API and a worker in this
 * process, a scripted model that answers at once). A step of ours is one model call plus one
 * sandboxed `run_command true`; the floors are a workflow of one activity per step that spawns a
 * bare `bwrap … true`, and one of a local activity per step (bench/step-floor-workflow.ts).
 *
 * 1. Latency per step, one run at a time: the gaps between a run's model calls (ours) or its
 *    activities (the floors); ours broken down by the spans a step records (bench/step-spans.ts),
 *    and the processes it starts (through the spawn server, or forked by the worker).
 * 2. CPU per step with `parallel` runs of 10 steps in flight: every process of the stack (this
 *    one, PostgreSQL, Temporal, the sandboxes and every process that exited meanwhile), summed,
 *    divided by the steps; and the whole machine's busy time, the kernel's included.
 * 3. A burst of `burst` runs of 10 steps created at once: steps per second, QUEUED → INPROGRESS,
 *    and, from the runs' histories, how long their workflow tasks took and waited, how many timed
 *    out, history events per step, where a step's time went, and the machine's CPU per step.
 *
 * Usage: npm run bench:steps -- [steps=40] [parallel=10] [burst=50]
 */
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import { closeServer } from '../api/server';
import { createLogger } from '../core/logger';
import { connectTemporalClient, connectWorkerConnection } from '../infra/connections';
import { SpawnServer } from '../activities/sandbox/spawn-server';
import { ScriptedModelServer } from '../test/helpers/scripted-model';
import { createWorker } from '../worker/create-worker';
import { runWorkflowId } from '../workflows/run-contract';
import { percentile, serveBenchApi, startBenchStack } from './bench-stack';
import { cpuOf, machineBusyMs } from './process-tree-cpu';
import { probeSpawns } from './spawn-probe';
import { recordStepSpans } from './step-spans';
import { fetchHistories, firstTaskDone, pickupTimeline, stepTimeline, workflowTaskTimes } from './workflow-task-times';

const run = promisify(execFile);
const FLOOR_QUEUE = 'bench-step-floor';
const log = (m: string) => process.stdout.write(`${m}\n`);

/** A figure's p50, p99 and max, and how many `unit` it was taken over. */
const line = (name: string, values: number[], unit = 'steps') =>
  `${name.padEnd(34)} p50 ${percentile(values, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(values, 99)
    .toFixed(1)
    .padStart(7)} ms   max ${Math.max(...values)
    .toFixed(0)
    .padStart(6)} ms   (${values.length} ${unit})`;

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

/** This process, as the CPU figures name it. */
const OWN = 'node (API + worker)';

async function main(): Promise<void> {
  const spawns = probeSpawns();
  const steps = Number(process.argv[2] ?? 40);
  const parallel = Number(process.argv[3] ?? 10);
  const burst = Number(process.argv[4] ?? 50);
  const model = new ScriptedModelServer();
  const modelUrl = await model.start();
  const stack = await startBenchStack({
    name: 'steps',
    env: {
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: modelUrl,
      AGENT_DEFAULT_MODEL: 'openai/bench',
      AGENT_IDLE_TIMEOUT_MINUTES: '0',
    },
  });
  const { config, secretsKeyring, dataSource } = stack;
  const logger = createLogger('error', 'bench');
  const { connection, client } = await connectTemporalClient({
    address: stack.temporalAddress,
    namespace: config.temporal.namespace,
  });
  const workerConnection = await connectWorkerConnection({ address: stack.temporalAddress });
  const worker = await createWorker({
    config,
    dataSource,
    connection: workerConnection,
    logger,
    platformEndpoints: [stack.databaseUrl, stack.temporalAddress],
    secretsKeyring,
  });
  const workerRun = worker.run();

  // The floors' worker: the same connection and server, its own queue and bundle.
  let floorTimes: number[] = [];
  const bwrapArgs = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--unshare-all',
    '--die-with-parent',
    'true',
  ];
  const floorWorker = await Worker.create({
    connection: workerConnection,
    namespace: config.temporal.namespace,
    taskQueue: FLOOR_QUEUE,
    workflowsPath: require.resolve('./step-floor-workflow'),
    activities: {
      async bareSandboxStep() {
        floorTimes.push(performance.now());
        await run('bwrap', bwrapArgs);
        return 0;
      },
      async localStep() {
        floorTimes.push(performance.now());
        return 0;
      },
    },
  });
  const floorRun = floorWorker.run();
  /** Runs `count` floor workflows at once; returns their workflow ids. */
  const floor = async (count: number, kind: 'activity' | 'local', each = steps) => {
    const ids = Array.from(
      { length: count },
      (_, i) => `floor-${kind}-${Date.now()}-${i}-${Math.random().toString(36).slice(2)}`,
    );
    await Promise.all(
      ids.map((workflowId) =>
        client.workflow.execute('stepFloorWorkflow', { taskQueue: FLOOR_QUEUE, workflowId, args: [each, kind] }),
      ),
    );
    return ids;
  };

  const { server, base, headers } = await serveBenchApi(stack, { client, connection }, logger);

  /** Creates a run of `each` steps, each but the last a `run_command true`; notes its model calls' times. */
  const createRun = async (each: number, callTimes: number[] = []) => {
    const marker = `steps-${Math.random().toString(36).slice(2)}`;
    model.script(marker, (_req, call) => {
      callTimes.push(performance.now());
      return call < each
        ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'true' } }] }
        : { text: 'done' };
    });
    const res = await fetch(`${base}/agent/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ prompt: marker }),
    });
    if (res.status !== 201) throw new Error(`POST /agent/runs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { run_id: string }).run_id;
  };
  /**
   * Waits for a run's end on Temporal (one long poll of its workflow), then reads it once: asking
   * the API every 25 ms, as this benchmark did, cost the API and PostgreSQL more CPU than the
   * steps it measured (400 requests a second with 10 runs in flight).
   */
  const finished = async (id: string) => {
    await client.workflow.getHandle(runWorkflowId(id)).result();
    const got = (await (await fetch(`${base}/agent/runs/${id}`, { headers })).json()) as {
      state: string;
      created_at: string;
      started_at?: string;
    };
    if (got.state !== 'SUCCEEDED') throw new Error(`run ${id} ended ${got.state}`);
    return { createdAt: Date.parse(got.created_at), startedAt: Date.parse(got.started_at!) };
  };

  // Warm-up: the first run of each kind pays for connections, bundles and caches.
  await finished(await createRun(3));
  await floor(1, 'activity', 3);
  await floor(1, 'local', 3);

  log(`\n1. Latency per step, one run at a time (3 runs of ${steps} steps each):`);
  spawns.reset();
  const launchedBefore = SpawnServer.launched;
  const spans = recordStepSpans();
  const ours: number[] = [];
  const ourWorkflows: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    const times: number[] = [];
    const id = await createRun(steps, times);
    ourWorkflows.push(runWorkflowId(id));
    await finished(id);
    ours.push(...gaps(times));
  }
  const started = spawns.read();
  const spanTimes = spans.stop();
  const launched = SpawnServer.launched - launchedBefore;
  const floors: Record<'activity' | 'local', number[]> = { activity: [], local: [] };
  const floorWorkflows: string[] = [];
  for (const kind of ['activity', 'local'] as const) {
    for (let i = 0; i < 3; i += 1) {
      floorTimes = [];
      const ids = await floor(1, kind);
      if (kind === 'activity') floorWorkflows.push(...ids);
      floors[kind].push(...gaps(floorTimes));
    }
  }
  log(line('ours: model call + run_command', ours));
  log(
    `processes started per step          ${(launched / ours.length).toFixed(1)} by spawn servers; ${(started.spawns / ours.length).toFixed(1)} forked by the worker${
      started.spawns
        ? `, each blocking its event loop p50 ${percentile(started.blockedMs, 50).toFixed(1)} ms, p99 ${percentile(started.blockedMs, 99).toFixed(1)} ms`
        : ''
    } (RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB; bench:spawn)`,
  );
  for (const [name, times] of [...spanTimes].sort((a, b) => percentile(b[1], 50) - percentile(a[1], 50)))
    log(line(`  of which ${name}`, times, 'spans'));
  log(line('floor: activity + bare bwrap', floors.activity));
  log(line('floor: local activity', floors.local));
  log(`ours / activity floor             p50 ${(percentile(ours, 50) / percentile(floors.activity, 50)).toFixed(2)}x`);
  // The round trip between activities, from the histories: where ours and the floor's differ.
  const [ourTimeline, floorTimeline] = [
    stepTimeline(await fetchHistories(client, ourWorkflows)),
    stepTimeline(await fetchHistories(client, floorWorkflows)),
  ];
  const p50 = (xs: number[]) => percentile(xs, 50).toFixed(1).padStart(6);
  log('per step, p50 (ms), from history    ours  floor');
  for (const [part, label] of [
    ['activityDispatch', 'activity scheduled → started'],
    ['activity', 'activity started → completed'],
    ['toWorkflowTask', 'completed → workflow task started'],
    ['workflowTask', 'workflow task started → completed'],
  ] as const)
    log(`  ${label.padEnd(33)} ${p50(ourTimeline[part])} ${p50(floorTimeline[part])}`);

  log(`\n2. CPU per step, ${parallel} runs of 10 steps in flight (every process of the stack):`);
  const oursCpu = await cpuOf(OWN, async () => {
    const ids = await Promise.all(Array.from({ length: parallel }, () => createRun(10)));
    await Promise.all(ids.map(finished));
  });
  const floorCpu = await cpuOf(OWN, async () => {
    await floor(parallel, 'activity', 10);
  });
  const perStep = (cpu: { total: number }) => cpu.total / (parallel * 10);
  const byCommand = (cpu: { byCommand: Map<string, number> }) =>
    [...cpu.byCommand]
      .filter(([, ms]) => ms / (parallel * 10) >= 0.5)
      .sort((a, b) => b[1] - a[1])
      .map(([command, ms]) => `${command} ${(ms / (parallel * 10)).toFixed(1)}`)
      .join(', ');
  log(`ours                               ${perStep(oursCpu).toFixed(1)} ms/step (${byCommand(oursCpu)})`);
  log(`floor: activity + bare bwrap       ${perStep(floorCpu).toFixed(1)} ms/step (${byCommand(floorCpu)})`);
  log(`ours / floor                       ${(perStep(oursCpu) / perStep(floorCpu)).toFixed(2)}x`);
  const machinePerStep = (cpu: { machine: number }) => cpu.machine / (parallel * 10);
  log(
    `the whole machine (with the kernel) ours ${machinePerStep(oursCpu).toFixed(1)}, floor ${machinePerStep(floorCpu).toFixed(1)} ms/step: ${(
      machinePerStep(oursCpu) / machinePerStep(floorCpu)
    ).toFixed(2)}x`,
  );

  log(`\n3. A burst: ${burst} runs of 10 steps created at once:`);
  const burstStarted = performance.now();
  const burstMachineBefore = machineBusyMs();
  const burstIds = await Promise.all(Array.from({ length: burst }, () => createRun(10)));
  const burstRuns = await Promise.all(burstIds.map(finished));
  const pickups = burstRuns.map((r) => r.startedAt - r.createdAt);
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  const burstMachineMs = machineBusyMs() - burstMachineBefore;
  log(
    `steps per second                   ${((burst * 10) / burstSeconds).toFixed(1)} (${burstSeconds.toFixed(1)} s in all)`,
  );
  log(line('QUEUED → INPROGRESS', pickups, 'runs'));
  const burstHistories = await fetchHistories(client, burstIds.map(runWorkflowId));
  const pickup = pickupTimeline(burstHistories, burstRuns);
  log(line("  of which the API's create", pickup.toWorkflowStart, 'runs'));
  log(line("  of which the first task's wait", pickup.toFirstTask, 'runs'));
  log(line('  of which in the first task', pickup.inFirstTask, 'runs'));
  const tasks = workflowTaskTimes(burstHistories);
  log(line('workflow task, started → done', tasks.durations, 'tasks'));
  log(line('workflow task, scheduled → started', tasks.waits, 'tasks'));
  log(
    `workflow tasks timed out / failed   ${tasks.timedOut} (${tasks.stickyTimedOut} waiting on the sticky queue) / ${tasks.failed}; history events per step ${(tasks.events / (burst * 10)).toFixed(1)}; signals per run ${(tasks.signals / burst).toFixed(1)}`,
  );
  const burstTimeline = stepTimeline(burstHistories);
  log(
    `per step, p50 (ms), from history    ${(
      [
        ['activityDispatch', 'dispatch'],
        ['activity', 'activity'],
        ['toWorkflowTask', 'to the workflow task'],
        ['workflowTask', 'the workflow task'],
      ] as const
    )
      .map(([part, label]) => `${label} ${percentile(burstTimeline[part], 50).toFixed(0)}`)
      .join(', ')}`,
  );
  log(
    `the whole machine's CPU per step    ${(burstMachineMs / (burst * 10)).toFixed(1)} ms (the kernel's included; ${((burstMachineMs / (burstSeconds * 1000 * os.cpus().length)) * 100).toFixed(0)}% of its ${os.cpus().length} cores)`,
  );
  log(`RSS of this process (API + worker)  ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB`);
  log(line('ours: workflow start → first task done', firstTaskDone(burstHistories), 'runs'));

  // The same burst of the activity floor: what the machine allows Temporal and bare sandboxes alone.
  const floorBurstStarted = performance.now();
  const floorMachineBefore = machineBusyMs();
  const floorBurstIds = await floor(burst, 'activity', 10);
  const floorBurstSeconds = (performance.now() - floorBurstStarted) / 1000;
  const floorMachineMs = machineBusyMs() - floorMachineBefore;
  const floorHistories = await fetchHistories(client, floorBurstIds);
  const floorTasks = workflowTaskTimes(floorHistories);
  log(
    `floor: steps per second            ${((burst * 10) / floorBurstSeconds).toFixed(1)} (${floorBurstSeconds.toFixed(1)} s in all; the machine's CPU ${(floorMachineMs / (burst * 10)).toFixed(1)} ms per step)`,
  );
  log(line('floor: workflow start → first task done', firstTaskDone(floorHistories), 'runs'));
  log(line('floor: workflow task, started → done', floorTasks.durations, 'tasks'));
  log(line('floor: workflow task, scheduled → started', floorTasks.waits, 'tasks'));

  floorWorker.shutdown();
  worker.shutdown();
  await Promise.all([floorRun, workerRun]);
  await closeServer(server);
  await workerConnection.close();
  await connection.close();
  await model.stop();
  await stack.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
