/**
 * Benchmark: a self-contained stack (embedded PostgreSQL, Temporal dev server, one worker, the
 * API, a scripted model that answers at once) and N runs created through the HTTP API.
 * Reports create latency, QUEUED → INPROGRESS latency, end-to-end time, throughput, history
 * size and the process's memory. Then, with the worker stopped (so that only the create path is
 * measured), `POST /agent/runs` side by side with a bare `workflow.start` of the same workflow
 * on the same Temporal server, in alternating rounds, and their throughput ratio.
 * Usage: npm run bench -- [runs=50] [concurrency=10] [steps=1] [compare=200]
 * (a run of N steps makes N model calls, each but the last asking for one write_file tool call;
 * `compare` requests of each kind, in rounds of 20).
 */
import { randomUUID } from 'node:crypto';
import { createApp } from '../api/app';
import { runWorkflowOptions } from '../core/run-workflow-options';
import { closeServer, listen } from '../api/server';
import { createLogger } from '../core/logger';
import { createApiKey } from '../db/api-keys';
import { connectTemporalClient, connectWorkerConnection } from '../infra/connections';
import { startTracing } from '../infra/tracing';
import { ScriptedModelServer } from '../test/helpers/scripted-model';
import { createWorker } from '../worker/create-worker';
import { RUN_WORKFLOW_TYPE, runWorkflowId } from '../workflows/run-contract';
import { percentile, startBenchStack } from './bench-stack';

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
  const { config, secretsKey, dataSource } = stack;
  const tracing = startTracing(config, 'agent-runs-bench');
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { connection, client } = await connectTemporalClient(stack.temporalAddress, config.temporal.namespace, tracing);
  const workerConnection = await connectWorkerConnection(stack.temporalAddress);
  const logger = createLogger('error', 'bench');
  const worker = await createWorker({
    config,
    dataSource,
    connection: workerConnection,
    logger,
    platformEndpoints: [stack.databaseUrl, stack.temporalAddress],
    secretsKey,
    tracing,
  });
  const workerRun = worker.run();
  const app = createApp({
    config,
    dataSource,
    temporalClient: client,
    temporalConnection: connection,
    logger,
    secretsKey,
  });
  const server = await listen(app, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1`;
  const { rawKey } = await createApiKey(dataSource, { kind: 'personal', name: 'bench', team: 'bench' });
  const headers = { Authorization: `Bearer ${rawKey}`, 'content-type': 'application/json' };
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
  const { api, bare } = await createVersusBareStart({
    total: compare,
    concurrency,
    create: async () => {
      const res = await fetch(`${base}/agent/runs`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'x' }) });
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
    },
    bareStart: async () => {
      // The same start the API makes (search attributes, memo), for a run that does not exist.
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
    },
  });
  log(`\n${compare} of each, ${concurrency} at a time, alternating rounds of ${ROUND} (worker stopped):`);
  log(summary('bare workflow.start', bare.latencies));
  log(summary('POST /agent/runs', api.latencies));
  log(`throughput                   bare ${bare.perSecond.toFixed(1)}/s, API ${api.perSecond.toFixed(1)}/s`);
  log(
    `CPU of this process          bare ${bare.cpuMsPerRequest.toFixed(2)} ms/request, API ${api.cpuMsPerRequest.toFixed(2)} ms/request`,
  );
  log(
    `API / bare                   throughput ${(api.perSecond / bare.perSecond).toFixed(2)}x, p50 ${
      percentile(api.latencies, 50) - percentile(bare.latencies, 50) >= 0 ? '+' : ''
    }${(percentile(api.latencies, 50) - percentile(bare.latencies, 50)).toFixed(1)} ms`,
  );

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
  /** CPU time of this process (client, API, Temporal client) per request. */
  cpuMsPerRequest: number;
}

/** Both kinds of request in alternating rounds, so that drift of the machine hits both alike. */
async function createVersusBareStart(options: {
  total: number;
  concurrency: number;
  create: () => Promise<void>;
  bareStart: () => Promise<void>;
}): Promise<{ api: Variant; bare: Variant }> {
  const measure = {
    api: { latencies: [] as number[], ms: 0, cpuMs: 0 },
    bare: { latencies: [] as number[], ms: 0, cpuMs: 0 },
  };
  const round = async (variant: 'api' | 'bare', count: number) => {
    const call = variant === 'api' ? options.create : options.bareStart;
    let left = count;
    const started = performance.now();
    const cpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: Math.min(options.concurrency, count) }, async () => {
        while (left > 0) {
          left -= 1;
          const t0 = performance.now();
          await call();
          measure[variant].latencies.push(performance.now() - t0);
        }
      }),
    );
    measure[variant].ms += performance.now() - started;
    const used = process.cpuUsage(cpu);
    measure[variant].cpuMs += (used.user + used.system) / 1000;
  };
  await round('bare', ROUND); // warm-up, not counted
  await round('api', ROUND);
  measure.api = { latencies: [], ms: 0, cpuMs: 0 };
  measure.bare = { latencies: [], ms: 0, cpuMs: 0 };
  for (let done = 0; done < options.total; done += ROUND) {
    const count = Math.min(ROUND, options.total - done);
    const first = (done / ROUND) % 2 === 0 ? 'api' : 'bare';
    await round(first, count);
    await round(first === 'api' ? 'bare' : 'api', count);
  }
  const result = (v: 'api' | 'bare') => ({
    latencies: measure[v].latencies,
    perSecond: (measure[v].latencies.length / measure[v].ms) * 1000,
    cpuMsPerRequest: measure[v].cpuMs / measure[v].latencies.length,
  });
  return { api: result('api'), bare: result('bare') };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
