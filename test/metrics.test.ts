import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import supertest from 'supertest';
import { createMetricsRouter } from '../api/routes/metrics-routes';
import { createLogger } from '../core/logger';
import { freeLoopbackAddress, installTemporalRuntime, temporalMetricsSource } from '../infra/temporal-runtime';
import { startWorkerMetricsServer } from '../worker/metrics-server';
import { parsePrometheusText, sampleValue, type Exposition } from './helpers/prometheus-text';
import { freePort } from './helpers/free-port';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { WebhookReceiver } from './helpers/webhook-receiver';

const TOKEN = 'scrape-token-7f3a';
const MODEL = 'openai/test-model';

let ctx: TestContext;
let workerMetrics: Server;
let workerMetricsUrl: string;
const receiver = new WebhookReceiver((_req, index) => (index === 0 ? 500 : 204));

beforeAll(async () => {
  // As worker/main.ts does: the SDK's exporter on loopback, served through the worker's /metrics.
  const temporalMetrics = await freeLoopbackAddress();
  installTemporalRuntime({ logger: createLogger('error', 'test'), prometheusBindAddress: temporalMetrics });
  ctx = await createTestContext({
    env: {
      METRICS_BEARER_TOKEN: TOKEN,
      MODEL_PRICES: JSON.stringify({ [MODEL]: { input: 3, output: 7 } }),
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100',
      WEBHOOK_RETRY_MAX_INTERVAL_MS: '200',
    },
  });
  workerMetrics = await startWorkerMetricsServer({
    host: '127.0.0.1',
    port: 0,
    bearerToken: TOKEN,
    extraMetrics: [temporalMetricsSource(temporalMetrics)],
  });
  workerMetricsUrl = `http://127.0.0.1:${(workerMetrics.address() as AddressInfo).port}/metrics`;
});

afterAll(async () => {
  await new Promise((resolve) => workerMetrics?.close(resolve));
  await receiver.stop().catch(() => undefined);
  await ctx?.close();
});

async function scrapeApi(): Promise<Exposition> {
  const res = await ctx.api.get('/metrics').set(auth(TOKEN));
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(res.text);
}

/** What moved between two scrapes, for one series. */
const delta = (before: Exposition, after: Exposition, name: string, labels: Record<string, string> = {}) =>
  sampleValue(after, name, labels) - sampleValue(before, name, labels);

test('a run with tool calls moves the counters by what it did', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const hooks = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(key))
    .send({ url: await receiver.start() });
  expect(hooks.status).toBe(201);
  const marker = uniqueName('metrics');
  // Four model calls of 10, 20, 30 and 40 tokens (half input, half output), three tool calls.
  const tools = [
    { name: 'write_file', arguments: { path: 'notes.txt', content: 'hello' } },
    { name: 'read_file', arguments: { path: 'no-such-file.txt' } },
    // Through the sandbox's egress proxy to the cloud metadata address: refused (link-local).
    {
      name: 'run_command',
      arguments: {
        command: `exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'GET http://169.254.169.254/ HTTP/1.1\\r\\nHost: 169.254.169.254\\r\\nConnection: close\\r\\n\\r\\n' >&3 && cat <&3`,
      },
    },
  ];
  ctx.model.script(marker, (_req, call) =>
    call <= tools.length
      ? { text: '', totalTokens: 10 * call, toolCalls: [tools[call - 1]!] }
      : { text: 'done', totalTokens: 10 * call },
  );

  const before = await scrapeApi();
  const runId = await createRun(ctx, key, { prompt: `Do it ${marker}`, config: { model_id: MODEL } });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const results = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call').map((e) => e.payload);
  expect(results.map((r) => [r.name, r.is_error])).toEqual([
    ['write_file', false],
    ['read_file', true],
    ['run_command', false],
  ]);
  expect(String(results[2]!.output)).toContain('403 Forbidden');
  // Run ended is recorded by the worker right after it commits; the GET above may see it first.
  const after = await waitFor(
    scrapeApi,
    (m) => delta(before, m, 'agent_runs_runs_ended_total', { state: 'SUCCEEDED' }) >= 1,
    'the run end to be counted',
  );

  expect(after.types.get('agent_runs_runs_created_total')).toBe('counter');
  expect(delta(before, after, 'agent_runs_runs_created_total', { origin: 'api' })).toBe(1);
  expect(delta(before, after, 'agent_runs_runs_created_total')).toBe(1);
  expect(delta(before, after, 'agent_runs_runs_ended_total', { state: 'SUCCEEDED', error_code: 'none' })).toBe(1);
  expect(delta(before, after, 'agent_runs_runs_ended_total')).toBe(1);
  expect(delta(before, after, 'agent_runs_run_queue_duration_seconds_count')).toBe(1);
  expect(delta(before, after, 'agent_runs_step_duration_seconds_count', { outcome: 'ok' })).toBe(4);

  const model = { model: MODEL };
  expect(delta(before, after, 'agent_runs_model_call_duration_seconds_count', { ...model, outcome: 'ok' })).toBe(4);
  expect(delta(before, after, 'agent_runs_model_call_duration_seconds_count', { outcome: 'error' })).toBe(0);
  expect(delta(before, after, 'agent_runs_model_tokens_total', { ...model, kind: 'input' })).toBe(5 + 10 + 15 + 20);
  expect(delta(before, after, 'agent_runs_model_tokens_total', { ...model, kind: 'output' })).toBe(5 + 10 + 15 + 20);
  // 50 input tokens at 3 USD and 50 output tokens at 7 USD per million.
  expect(delta(before, after, 'agent_runs_model_cost_usd_total', model)).toBeCloseTo((50 * 3 + 50 * 7) / 1e6, 12);

  expect(delta(before, after, 'agent_runs_tool_calls_total', { tool: 'write_file', outcome: 'ok' })).toBe(1);
  expect(delta(before, after, 'agent_runs_tool_calls_total', { tool: 'read_file', outcome: 'error' })).toBe(1);
  expect(delta(before, after, 'agent_runs_tool_calls_total', { tool: 'run_command', outcome: 'ok' })).toBe(1);
  expect(delta(before, after, 'agent_runs_tool_calls_total')).toBe(3);
  expect(delta(before, after, 'agent_runs_tool_call_duration_seconds_count', { tool: 'write_file' })).toBe(1);
  expect(
    delta(before, after, 'agent_runs_sandbox_refusals_total', { kind: 'private_address', source: 'sandbox' }),
  ).toBe(1);

  // The create request counted under its route template; the run's own URL never becomes a label.
  const created = { method: 'POST', route: '/api/v1/agent/runs', status: '201' };
  expect(delta(before, after, 'agent_runs_http_request_duration_seconds_count', created)).toBe(1);
  expect(
    delta(before, after, 'agent_runs_http_request_duration_seconds_count', {
      method: 'GET',
      route: '/api/v1/agent/runs/:runId',
      status: '200',
    }),
  ).toBeGreaterThanOrEqual(1);
  const labelValues = after.samples.flatMap((s) => Object.values(s.labels));
  expect(labelValues.filter((v) => v.includes(runId))).toEqual([]);

  // Webhook deliveries: the first attempt got a 500, every later one a 204.
  const deliveries = await waitFor(
    scrapeApi,
    (m) => {
      const answered = receiver.requests.length;
      return (
        answered >= 2 &&
        delta(before, m, 'agent_runs_webhook_delivery_attempts_total', { outcome: 'http_error' }) === 1 &&
        delta(before, m, 'agent_runs_webhook_delivery_attempts_total', { outcome: 'delivered' }) === answered - 1
      );
    },
    'the webhook attempts to be counted',
  );
  expect(delta(before, deliveries, 'agent_runs_webhook_delivery_attempts_total')).toBe(receiver.requests.length);
});

test('routes are labelled by template, and a path no route matches by a fixed label', async () => {
  const { key } = await ctx.newTeamKey();
  const before = await scrapeApi();
  const missing = `/api/v1/no-such-thing-${uniqueName('x')}`;
  expect((await ctx.api.get(missing).set(auth(key))).status).toBe(404);
  expect((await ctx.api.get('/api/v1/agent/runs')).status).toBe(401);
  const after = await scrapeApi();
  expect(
    delta(before, after, 'agent_runs_http_request_duration_seconds_count', { route: 'unmatched', status: '404' }),
  ).toBe(1);
  expect(
    delta(before, after, 'agent_runs_http_request_duration_seconds_count', {
      method: 'GET',
      route: '/api/v1/agent/runs',
      status: '401',
    }),
  ).toBe(1);
  expect(after.samples.flatMap((s) => Object.values(s.labels)).some((v) => v.includes('no-such-thing'))).toBe(false);
});

test("the worker's endpoint serves the registry and the Temporal SDK's metrics", async () => {
  const res = await fetch(workerMetricsUrl, { headers: auth(TOKEN) });
  expect(res.status).toBe(200);
  const metrics = parsePrometheusText(await res.text());
  expect(metrics.types.get('agent_runs_tool_calls_total')).toBe('counter');
  expect(metrics.types.get('agent_runs_step_duration_seconds')).toBe('histogram');
  // Process metrics of prom-client, and the SDK's own, for this worker's task queue.
  expect(sampleValue(metrics, 'process_cpu_seconds_total')).toBeGreaterThan(0);
  const slots = metrics.samples.filter(
    (s) => s.name === 'temporal_worker_task_slots_available' && s.labels.task_queue === ctx.config.temporal.taskQueue,
  );
  expect(slots.length).toBeGreaterThan(0);
  expect(metrics.samples.some((s) => s.name.startsWith('temporal_') && s.name.endsWith('_total'))).toBe(true);
});

test('METRICS_BEARER_TOKEN is required on the API and on the worker', async () => {
  for (const headers of [{}, auth('wrong-token'), { Authorization: TOKEN }]) {
    const api = await ctx.api.get('/metrics').set(headers);
    expect(api.status).toBe(401);
    expect(api.headers['www-authenticate']).toBe('Bearer');
    expect(api.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect((api.body as { detail: string }).detail).toContain('METRICS_BEARER_TOKEN');
    expect(api.text).not.toContain('agent_runs_');
    const worker = await fetch(workerMetricsUrl, { headers });
    expect(worker.status).toBe(401);
    expect(worker.headers.get('www-authenticate')).toBe('Bearer');
    expect(await worker.text()).not.toContain('agent_runs_');
  }
  // An API key is not the metrics token.
  const { key } = await ctx.newTeamKey();
  expect((await ctx.api.get('/metrics').set(auth(key))).status).toBe(401);
});

/** An entry point (`api/main.ts`, ...) as production starts it; resolves with its exit code and output. */
function runEntryPoint(script: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const inherited = { ...process.env };
  delete inherited.METRICS_BEARER_TOKEN;
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: path.resolve(__dirname, '..'),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...inherited, LOG_FORMAT: 'json', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

test('off loopback without METRICS_BEARER_TOKEN, the API, `npm start` and a worker refuse to start, naming it', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-metrics-'));
  try {
    const env = {
      HOST: '0.0.0.0',
      AGENT_RUNS_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      WORKER_METRICS_PORT: String(await freePort()),
    };
    const scripts = ['api/main.ts', 'bin/start.ts', 'worker/main.ts'];
    const ended = await Promise.all(scripts.map((script) => runEntryPoint(script, env)));
    for (const [i, { code, output }] of ended.entries()) {
      expect({ script: scripts[i], code }).toEqual({ script: scripts[i], code: 1 });
      expect(output).toContain('METRICS_BEARER_TOKEN: required when');
      expect(output).toContain('HOST=0.0.0.0');
    }
    // Refused before anything started: `npm start` made no database, no key, nothing.
    expect(readdirSync(dataDir)).toEqual([]);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('/metrics is open without a token only on loopback; off it, a token is needed and then enforced', async () => {
  // A bare app, as createApp mounts the router (without its error handler: refusals are plain 401s).
  const appOf = (router: ReturnType<typeof createMetricsRouter>) => {
    const app = new Koa().use(router.routes());
    app.silent = true;
    return app;
  };
  for (const host of ['127.0.0.1', '::1', 'localhost']) {
    const app = appOf(createMetricsRouter({ host }));
    const res = await supertest(app.callback()).get('/metrics');
    expect({ host, status: res.status }).toEqual({ host, status: 200 });
    expect(res.text).toContain('agent_runs_');
    const worker = await startWorkerMetricsServer({ host, port: 0 });
    try {
      const { port } = worker.address() as AddressInfo;
      const scrape = await fetch(`http://${host === '::1' ? '[::1]' : host}:${port}/metrics`);
      expect({ host, status: scrape.status }).toEqual({ host, status: 200 });
    } finally {
      await new Promise((resolve) => worker.close(resolve));
    }
  }
  for (const host of ['0.0.0.0', '::', '10.1.2.3']) {
    expect(() => createMetricsRouter({ host })).toThrow(/METRICS_BEARER_TOKEN: required when the API listens/);
    await expect(startWorkerMetricsServer({ host, port: 0 })).rejects.toThrow(/METRICS_BEARER_TOKEN/);
  }
  // With the token, any address: scrapes without it are refused.
  const app = appOf(createMetricsRouter({ host: '0.0.0.0', bearerToken: TOKEN }));
  expect((await supertest(app.callback()).get('/metrics')).status).toBe(401);
  expect((await supertest(app.callback()).get('/metrics').set(auth(TOKEN))).status).toBe(200);
});
