/**
 * Benchmark: what a harness costs over this service's own loop. A self-contained stack (embedded
 * PostgreSQL, Temporal dev server, one worker, the API) and a scripted provider that answers at
 * once in each protocol; for each harness (oz, claude, codex, gemini), runs of two model calls
 * (one command, `true`, then an answer) and a follow-up, one at a time. Reports, per harness:
 * created → first provider request (provisioning and, for a CLI, its start), the step between
 * the two calls (the command and the CLI's own handling), created → SUCCEEDED, and follow-up →
 * first provider request of the resumed turn.
 * Usage: npm run bench:harness -- [runs=3] [harnesses=oz,claude,codex,gemini]
 */
import { closeServer } from '../api/server';
import { createLogger } from '../core/logger';
import { connectTemporalClient, connectWorkerConnection } from '../infra/connections';
import { ScriptedModelServer, type ScriptedToolCall } from '../test/helpers/scripted-model';
import { createWorker } from '../worker/create-worker';
import { percentile, serveBenchApi, startBenchStack } from './bench-stack';

/** The command tool of each harness, running `true`. */
const COMMAND: Record<string, ScriptedToolCall> = {
  oz: { name: 'run_command', arguments: { command: 'true' } },
  claude: { name: 'Bash', arguments: { command: 'true' } },
  codex: { name: 'exec_command', arguments: { cmd: 'true' } },
  gemini: { name: 'run_shell_command', arguments: { command: 'true' } },
};

/**
 * The model each CLI is run with, where its default would not do: with its default model Gemini
 * CLI makes extra calls around each step that a scripted provider does not answer as it expects
 * (measured: 4 s between two calls, the run ending ~90 s after its answer).
 */
const MODEL: Record<string, string | undefined> = { gemini: process.env.BENCH_GEMINI_MODEL ?? 'gemini-2.5-flash' };

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 3);
  const model = new ScriptedModelServer();
  const modelUrl = await model.start();
  const root = modelUrl.replace(/\/v1$/, '');
  const stack = await startBenchStack({
    name: 'harness',
    env: {
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: 'bench',
      ANTHROPIC_BASE_URL: root,
      GEMINI_API_KEY: 'bench',
      GEMINI_BASE_URL: root,
      AGENT_DEFAULT_MODEL: 'openai/bench',
      AGENT_IDLE_TIMEOUT_MINUTES: '5',
    },
  });
  const { config, secretsKeyring, dataSource } = stack;
  const log = (m: string) => process.stdout.write(`${m}\n`);
  const { connection, client } = await connectTemporalClient({
    address: stack.temporalAddress,
    namespace: config.temporal.namespace,
  });
  const workerConnection = await connectWorkerConnection({ address: stack.temporalAddress });
  const logger = createLogger('error', 'bench');
  const worker = await createWorker({
    config,
    dataSource,
    connection: workerConnection,
    logger,
    platformEndpoints: [stack.databaseUrl, stack.temporalAddress],
    secretsKeyring,
  });
  const workerRun = worker.run();
  const { server, base, headers } = await serveBenchApi(stack, { client, connection }, logger);
  log(`offered: ${JSON.stringify(worker.harnesses.offered)}; ${runs} run(s) per harness, one at a time`);

  const waitFor = async (id: string, turnEnded: (run: { state: string }) => boolean) => {
    for (;;) {
      const run = (await (await fetch(`${base}/agent/runs/${id}`, { headers })).json()) as {
        state: string;
        status_message?: unknown;
      };
      if (turnEnded(run)) return run;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const row = (name: string, values: number[]) =>
    `${name.padEnd(38)}${
      values.length
        ? `p50 ${percentile(values, 50).toFixed(0).padStart(6)} ms   max ${Math.max(...values)
            .toFixed(0)
            .padStart(6)} ms`
        : 'n/a'
    }`;

  const harnesses = process.argv[3] ? process.argv[3].split(',') : ['oz', 'claude', 'codex', 'gemini'];
  for (const harness of harnesses) {
    const toFirst: number[] = [];
    const step: number[] = [];
    const total: number[] = [];
    const resume: number[] = [];
    for (let i = 0; i < runs; i++) {
      const marker = `bench-${harness}-${i}-${Math.random().toString(36).slice(2)}`;
      const at: number[] = [];
      model.script(marker, (_req, call) => {
        at[call] = Date.now();
        return call === 1 ? { text: '', toolCalls: [COMMAND[harness]!] } : { text: `done ${call}` };
      });
      const t0 = Date.now();
      const res = await fetch(`${base}/agent/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          prompt: marker,
          ...(harness === 'oz'
            ? {}
            : { config: { harness: { type: harness, ...(MODEL[harness] ? { model_id: MODEL[harness] } : {}) } } }),
        }),
      });
      const { run_id: id } = (await res.json()) as { run_id: string };
      const ended = await waitFor(id, (r) => !['QUEUED', 'INPROGRESS'].includes(r.state));
      if (ended.state !== 'SUCCEEDED') {
        throw new Error(`${harness} run ${id} ended ${ended.state}: ${JSON.stringify(ended.status_message)}`);
      }
      total.push(Date.now() - t0);
      toFirst.push(at[1]! - t0);
      step.push(at[2]! - at[1]!);
      const calls = at.length;
      const f0 = Date.now();
      await fetch(`${base}/agent/runs/${id}/followups`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'and once more' }),
      });
      await model.waitForCalls(marker, calls);
      resume.push(at[calls]! - f0);
      await waitFor(id, (r) => r.state === 'SUCCEEDED');
    }
    log(`\n${harness}`);
    log(row('  created → first provider request', toFirst));
    log(row('  step (command true) between calls', step));
    log(row('  created → SUCCEEDED', total));
    log(row('  follow-up → resumed request', resume));
  }

  worker.shutdown();
  await workerRun;
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
