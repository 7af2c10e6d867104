/**
 * Benchmark: how long a run waits when the worker that holds it is killed (`kill -9`) mid-command,
 * from the kill to its next step on the other worker, and whether that step finds the files of
 * the steps before (its checkpoint). Two worker processes on a private stack, once with the
 * defaults (ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS, WORKSPACE_SCHEDULE_TO_START_SECONDS,
 * WORKER_LEASE_SECONDS) and once with the test settings (3, 5, 5).
 * Usage: npm run bench:resume [-- defaults|test]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createLogger } from '../core/logger';
import { ScriptedModelServer } from '../test/helpers/scripted-model';
import { unmountUnder } from '../test/stack/temp-root';
import { serveBenchApi, startBenchStack, type BenchStack } from './bench-stack';

const ROOT = path.resolve(__dirname, '..');
const TEST_SETTINGS = {
  ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '3',
  WORKSPACE_SCHEDULE_TO_START_SECONDS: '5',
  WORKER_LEASE_SECONDS: '5',
};

function spawnWorker(stack: BenchStack, id: string, dir: string, modelUrl: string, env: Record<string, string>) {
  return spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      AGENT_RUNS_DATA_DIR: stack.config.dataDir,
      AGENT_RUNS_WORKSPACE_DIR: dir,
      WORKER_ID: id,
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: modelUrl,
      AGENT_DEFAULT_MODEL: 'openai/bench',
      WORKER_METRICS_PORT: '0',
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: 'ignore',
  });
}

async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 300_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function measure(settings: 'defaults' | 'test'): Promise<void> {
  const env = settings === 'test' ? TEST_SETTINGS : {};
  const stack = await startBenchStack({ name: 'resume', env });
  const model = new ScriptedModelServer();
  const modelUrl = `${await model.start()}`;
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const client = new Client({ connection, namespace: stack.config.temporal.namespace });
  const api = await serveBenchApi(stack, { client, connection }, createLogger('error', 'bench'));
  const dirs = [0, 1].map(() => mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bench-resume-')));
  const workers: ChildProcess[] = dirs.map((dir, i) => spawnWorker(stack, `bench-${i}`, dir, modelUrl, env));
  let resumedAt = 0;
  let found = '';
  try {
    model.script('resume-bench', (request, call) => {
      if (call === 1)
        return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'echo one > first.txt' } }] };
      if (call === 2)
        return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'touch started; sleep 600' } }] };
      if (call === 3) {
        resumedAt = Date.now();
        return { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'cat first.txt' } }] };
      }
      found = JSON.stringify(request.messages.at(-1));
      return { text: 'done' };
    });
    const res = await fetch(`${api.base}/agent/runs`, {
      method: 'POST',
      headers: api.headers,
      body: JSON.stringify({ prompt: 'resume-bench', config: { idle_timeout_minutes: 0 } }),
    });
    const { run_id: runId } = (await res.json()) as { run_id: string };
    const holder = await until(() => dirs.findIndex((d) => existsSync(path.join(d, runId, 'started'))) + 1, 'step 2');
    const killedAt = Date.now();
    workers[holder - 1]!.kill('SIGKILL');
    await until(() => resumedAt, 'the next step on the other worker');
    await until(async () => {
      const run = (await (await fetch(`${api.base}/agent/runs/${runId}`, { headers: api.headers })).json()) as {
        state: string;
      };
      return ['SUCCEEDED', 'FAILED', 'ERROR'].includes(run.state) ? run.state : '';
    }, 'the run to end');
    console.log(
      `${settings}: the next step began ${((resumedAt - killedAt) / 1000).toFixed(1)} s after the kill on the other worker; step 1's file there: ${found.includes('one') ? 'yes' : 'NO'}`,
    );
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    api.server.close();
    await connection.close();
    await model.stop();
    await stack.stop();
    // The killed worker's runs' filesystems stay mounted (its successor would have swept them).
    for (const d of dirs) {
      unmountUnder(d);
      rmSync(d, { recursive: true, force: true });
    }
  }
}

/** One setting per process: a process installs the Temporal runtime once. */
async function main(): Promise<void> {
  const which = process.argv[2];
  if (which === 'test' || which === 'defaults') return measure(which);
  for (const settings of ['test', 'defaults']) {
    const child = spawn(process.execPath, ['--import', 'tsx', __filename, settings], { cwd: ROOT, stdio: 'inherit' });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`the ${settings} measure exited ${code}`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
