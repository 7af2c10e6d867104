/**
 * Benchmark: a self-contained stack (embedded PostgreSQL, Temporal dev server, one worker, the
 * API, a scripted model that answers at once) and N runs created through the HTTP API.
 * Reports create latency, QUEUED → INPROGRESS latency, end-to-end time, throughput, history
 * size and the process's memory. Then, with the worker stopped (so that only the create path is
 * measured), `POST /agent/runs` side by side with a bare `workflow.start` of the same workflow
 * on the same Temporal server and with that start behind a bare `node:http` server (the floor of
 * any HTTP API on this machine), in rounds that take turns, with their latencies, throughput
 * ratios and where the CPU went.
 * Usage: npm run bench -- [runs=50] [concurrency=10] [steps=1] [compare=200]
 * (a run of N steps makes N model calls, each but the last asking for one write_file tool call;
 * `compare` requests of each kind, in rounds of 20).
 * With BENCH_PROFILE_DIR set, it then profiles `compare` more requests to the HTTP floor and to
 * the API (this process's main thread only) into create-floor.cpuprofile and create-api.cpuprofile.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { runWorkflowOptions } from '../services/runs/run-workflow-options';
import { closeServer } from '../api/server';
import { createLogger } from '../core/logger';
import { connectTemporalClient, connectWorkerConnection } from '../infra/connections';
import { startTracing } from '../infra/tracing';
import { ScriptedModelServer } from '../test/helpers/scripted-model';
import { createWorker } from '../worker/create-worker';
import { RUN_WORKFLOW_TYPE, runWorkflowId } from '../workflows/run-contract';
import { percentile, serveBenchApi, startBenchStack, timedConcurrently } from './bench-stack';
import { profileTo } from './cpu-profile';
import { startHttpFloor } from './http-floor';
import { startHttpLoadThread } from './http-load-thread';
import { cpuSince, descendantCpuMs } from './process-tree-cpu';

const summary = (name: string, values: number[]) =>
  `${name.padEnd(28)} p50 ${percentile(values, 50).toFixed(1).padStart(6)} ms   p95 ${percentile(values, 95)
    .toFixed(0)
    .padStart(6)} ms   max ${Math.max(...values)
    .toFixed(0)
    .padStart(6)} ms`;

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 50);
  const concurrency = Number(process.argv[3] ?? 10);
  const steps = Number(process.argv[4] ?? 1);
  const compare = Number(process.argv[5] ?? 200);
  const profileDir = process.env.BENCH_PROFILE_DIR;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const model = new ScriptedModelServer();
  const modelUrl = await model.start();
  const bootStart = Date.now();
  // The secrets key is made in the bench's own data dir, where the worker finds it too.
  const stack = await startBenchStack({
    env: {
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: modelUrl,
      AGENT_DEFAULT_MODEL: 'openai/bench',
      AGENT_IDLE_TIMEOUT_MINUTES: '0',
      // Tracing as the environment sets it (OTEL_EXPORTER_OTLP_ENDPOINT, …), to measure what it costs.
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_'))),
    } as Record<string, string>,
  });
  const { config, secretsKeyring, dataSource } = stack;
  const tracing = startTracing(config, 'agent-runs-bench');
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { connection, client } = await connectTemporalClient(
    { address: stack.temporalAddress, namespace: config.temporal.namespace },
    tracing,
  );
  const workerConnection = await connectWorkerConnection({ address: stack.temporalAddress });
  const logger = createLogger('error', 'bench');
  const worker = await createWorker({
    config,
    dataSource,
    connection: workerConnection,
    logger,
    platformEndpoints: [stack.databaseUrl, stack.temporalAddress],
    secretsKeyring,
    tracing,
  });
  const workerRun = worker.run();
  const { server, base, headers } = await serveBenchApi(stack, { client, connection }, logger);
  log(`stack up in ${Date.now() - bootStart} ms; ${runs} runs of ${steps} step(s), ${concurrency} at a time`);
  log(`tracing ${config.tracing ? `on, to ${config.tracing.tracesUrl}` : 'off'}`);

  const createMs: number[] = [];
  const pickupMs: number[] = [];
  const totalMs: number[] = [];
  const ids: string[] = [];
  const started = Date.now();
  let next = 0;
  const rssBefore = process.memoryUsage().rss;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next += 1;
        const marker = `bench-${next}-${Math.random().toString(36).slice(2)}`;
        model.script(marker, (_req, call) =>
          call < steps
            ? { text: '', toolCalls: [{ name: 'write_file', arguments: { path: `f${call}.txt`, content: 'x' } }] }
            : { text: 'done' },
        );
        const t0 = Date.now();
        const res = await fetch(`${base}/agent/runs`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ prompt: marker }),
        });
        const { run_id: id } = (await res.json()) as { run_id: string };
        createMs.push(Date.now() - t0);
        ids.push(id);
        for (;;) {
          const run = (await (await fetch(`${base}/agent/runs/${id}`, { headers })).json()) as {
            state: string;
            created_at: string;
            started_at?: string;
            updated_at: string;
          };
          if (run.state === 'SUCCEEDED') {
            pickupMs.push(Date.parse(run.started_at!) - Date.parse(run.created_at));
            totalMs.push(Date.parse(run.updated_at) - Date.parse(run.created_at));
            break;
          }
          if (run.state !== 'QUEUED' && run.state !== 'INPROGRESS') throw new Error(`run ${id} ended ${run.state}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    }),
  );
  const elapsed = Date.now() - started;
  const handle = client.workflow.getHandle(runWorkflowId(ids[0]!));
  await handle.result(); // the idle window is 0: the workflow completes right after the run
  const history = await handle.fetchHistory();

  log(summary('POST /agent/runs', createMs));
  log(summary('QUEUED → INPROGRESS', pickupMs));
  log(summary('created → SUCCEEDED', totalMs));
  log(`throughput                   ${((runs / elapsed) * 1000).toFixed(1)} runs/s`);
  log(`history events of a run      ${history.events?.length ?? 0} (${steps} step(s), whole execution)`);
  log(
    `RSS (API + worker process)   ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB (was ${(rssBefore / 1048576).toFixed(0)} MiB)`,
  );

  worker.shutdown();
  await workerRun;
  // The same start the API makes (search attributes, memo), for a run that does not exist.
  const startBare = async () => {
    const run = {
      runId: randomUUID(),
      name: null,
      modelId: config.models.defaultModel,
      creatorUid: 'bench',
      source: 'API' as const,
      environmentId: null,
      title: 'x',
    };
    await client.workflow.start(RUN_WORKFLOW_TYPE, runWorkflowOptions(config, run, 'QUEUED'));
    return run.runId;
  };
  const floor = await startHttpFloor(startBare);
  const load = startHttpLoadThread();
  const post = (url: string, init: { headers: Record<string, string>; body: string }) => (count: number) =>
    load.run({ url, init: { method: 'POST', ...init }, expectStatus: 201, count, concurrency });
  const toFloor = post(floor.url, { headers: { 'content-type': 'application/json' }, body: '{}' });
  const toApi = post(`${base}/agent/runs`, { headers, body: JSON.stringify({ prompt: 'x' }) });
  const measured = await compareInRounds(compare, {
    bare: (count) => timedConcurrently(count, concurrency, startBare),
    floor: toFloor,
    api: toApi,
  });
  const { bare, floor: http, api } = measured;
  log(
    `\n${compare} of each, ${concurrency} at a time, in rounds of ${ROUND} taking turns (worker stopped; HTTP clients on a thread of their own):`,
  );
  log(summary('bare workflow.start', bare.latencies));
  log(summary('HTTP floor (node:http)', http.latencies));
  log(summary('POST /agent/runs', api.latencies));
  log(
    `throughput                   bare ${bare.perSecond.toFixed(1)}/s, floor ${http.perSecond.toFixed(1)}/s, API ${api.perSecond.toFixed(1)}/s`,
  );
  log(
    `CPU of this process          bare ${bare.cpuMsPerRequest.toFixed(2)}, floor ${http.cpuMsPerRequest.toFixed(2)}, API ${api.cpuMsPerRequest.toFixed(2)} ms/request (with the client thread)`,
  );
  const stackCpu = (v: Variant) =>
    [...v.stackCpuMsPerRequest]
      .filter(([, ms]) => ms > 0.05)
      .map(([command, ms]) => `${command} ${ms.toFixed(2)}`)
      .join(', ') || 'none';
  log(`CPU of the stack (ms/request) bare: ${stackCpu(bare)}; floor: ${stackCpu(http)}; API: ${stackCpu(api)}`);
  const delta = (a: Variant, b: Variant) => {
    const d = percentile(a.latencies, 50) - percentile(b.latencies, 50);
    return `${d >= 0 ? '+' : ''}${d.toFixed(1)} ms`;
  };
  log(
    `API / bare                   throughput ${(api.perSecond / bare.perSecond).toFixed(2)}x, p50 ${delta(api, bare)}`,
  );
  log(
    `API / HTTP floor             throughput ${(api.perSecond / http.perSecond).toFixed(2)}x, p50 ${delta(api, http)}`,
  );
  log(
    `HTTP floor / bare            throughput ${(http.perSecond / bare.perSecond).toFixed(2)}x, p50 ${delta(http, bare)}`,
  );

  if (profileDir) {
    // The server side of each HTTP variant alone (the clients run on their thread), one after the other.
    for (const [name, send] of [
      ['floor', toFloor],
      ['api', toApi],
    ] as const) {
      const file = path.join(profileDir, `create-${name}.cpuprofile`);
      await profileTo(file, () => send(compare));
      log(`CPU profile of ${compare} requests to the ${name}: ${file}`);
    }
  }

  await load.stop();
  await floor.stop();
  await closeServer(server);
  await tracing?.shutdown();
  await workerConnection.close();
  await connection.close();
  await model.stop();
  await stack.stop();
}

const ROUND = 20;

interface Variant {
  latencies: number[];
  perSecond: number;
  /** CPU time of this process (API, Temporal client, the client thread) per request. */
  cpuMsPerRequest: number;
  /** CPU time of the stack's processes (PostgreSQL, Temporal server) per request, by command. */
  stackCpuMsPerRequest: Map<string, number>;
}

/**
 * `total` requests of each variant, in rounds of ROUND that take turns (the order rotating), so
 * that drift of the machine hits every variant alike. A variant runs `count` requests and
 * resolves with their latencies.
 */
async function compareInRounds<Name extends string>(
  total: number,
  variants: Record<Name, (count: number) => Promise<number[]>>,
): Promise<Record<Name, Variant>> {
  const names = Object.keys(variants) as Name[];
  const fresh = () => ({ latencies: [] as number[], ms: 0, cpuMs: 0, stackCpuMs: new Map<string, number>() });
  let measure = Object.fromEntries(names.map((n) => [n, fresh()])) as Record<Name, ReturnType<typeof fresh>>;
  const round = async (name: Name, count: number) => {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const stackCpu = descendantCpuMs();
    const latencies = await variants[name](count);
    const m = measure[name];
    m.ms += performance.now() - started;
    m.latencies.push(...latencies);
    const used = process.cpuUsage(cpu);
    m.cpuMs += (used.user + used.system) / 1000;
    for (const [command, ms] of cpuSince(stackCpu, descendantCpuMs())) {
      m.stackCpuMs.set(command, (m.stackCpuMs.get(command) ?? 0) + ms);
    }
  };
  for (const name of names) await round(name, ROUND); // warm-up, not counted
  measure = Object.fromEntries(names.map((n) => [n, fresh()])) as typeof measure;
  for (let done = 0, turn = 0; done < total; done += ROUND, turn += 1) {
    const count = Math.min(ROUND, total - done);
    for (let i = 0; i < names.length; i += 1) await round(names[(turn + i) % names.length]!, count);
  }
  return Object.fromEntries(
    names.map((n) => {
      const m = measure[n];
      return [
        n,
        {
          latencies: m.latencies,
          perSecond: (m.latencies.length / m.ms) * 1000,
          cpuMsPerRequest: m.cpuMs / m.latencies.length,
          stackCpuMsPerRequest: new Map([...m.stackCpuMs].map(([c, ms]) => [c, ms / m.latencies.length])),
        },
      ];
    }),
  ) as Record<Name, Variant>;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
