import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../core/config';
import { createLogger, REDACTED } from '../core/logger';
import { assertPortsFree, plannedPorts, PortUnavailableError } from '../infra/port-check';
import { freePort } from './helpers/free-port';
import { startMcpHttpServer } from './helpers/mcp-http-server';
import { auth, createRun, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { WebhookReceiver } from './helpers/webhook-receiver';

/** A log destination that keeps every line and lets a test await one. */
class LogCapture {
  readonly lines: string[] = [];
  private readonly waiters = new Set<() => void>();

  write(chunk: string): void {
    for (const line of chunk.split('\n')) if (line) this.lines.push(line);
    for (const wake of this.waiters) wake();
  }

  entries(): LogEntry[] {
    return this.lines.map((line) => JSON.parse(line) as LogEntry);
  }

  /** Resolves with the first entry matching `match`, once it is written. */
  until(match: (entry: LogEntry) => boolean, what: string, timeoutMs = 30_000): Promise<LogEntry> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.entries().find(match);
        if (!found) return;
        cleanup();
        resolve(found);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`Timed out waiting for a log line: ${what}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }
}

interface LogEntry {
  level: string;
  time: string;
  component: string;
  msg: string;
  [field: string]: unknown;
}

const REPO_ROOT = path.resolve(__dirname, '..');
const hex = () => randomBytes(12).toString('hex');
const OPENAI_KEY = `sk-test-${hex()}`;
const GIT_TOKEN = `ghp_${hex()}`;
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const MCP_HEADER_TOKEN = `mcp-header-${hex()}`;
const MCP_ENV_SECRET = `mcp-env-${hex()}`;
const QUERY_SECRET = `query-${hex()}`;

const logs = new LogCapture();
let ctx: TestContext;
let mcpHttp: Awaited<ReturnType<typeof startMcpHttpServer>>;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  mcpHttp = await startMcpHttpServer(MCP_HEADER_TOKEN, { colour: 'teal' });
  ctx = await createTestContext({
    logDestination: logs,
    env: {
      LOG_LEVEL: 'debug',
      OPENAI_API_KEY: OPENAI_KEY,
      GIT_TOKEN,
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      // The MCP servers and the webhook receiver listen on loopback, which only this opens.
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
      // The stdio MCP server runs from this repository with tsx.
      AGENT_SANDBOX_READONLY_PATHS: `${path.join(REPO_ROOT, 'node_modules')},${path.join(REPO_ROOT, 'test/fixtures')}`,
    },
  });
});

afterAll(async () => {
  await ctx?.close();
  await mcpHttp?.stop();
  await receiver.stop();
});

const stateLines = (runId: string) => logs.entries().filter((e) => e.msg === 'run state changed' && e.run_id === runId);

test('a full run at LOG_LEVEL=debug: requests and state changes are logged, and no secret given to the service is', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const hook = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(key))
    .send({ url: await receiver.start() });
  expect(hook.status).toBe(201);
  const webhookSecret = (hook.body as { secret: string }).secret;

  const marker = uniqueName('logged');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'mcp__kb__lookup', arguments: { key: 'colour' } },
            { name: 'mcp__calc__add', arguments: { a: 2, b: 3 } },
          ],
        }
      : { text: `answer ${call}` },
  );
  const created = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({
      prompt: `Use the tools ${marker}`,
      config: {
        mcp_servers: {
          kb: { url: mcpHttp.url, headers: { Authorization: `Bearer ${MCP_HEADER_TOKEN}` } },
          calc: {
            command: process.execPath,
            args: [
              '--import',
              pathToFileURL(path.join(REPO_ROOT, 'node_modules/tsx/dist/loader.mjs')).href,
              path.join(REPO_ROOT, 'test/fixtures/mcp-stdio-server.ts'),
            ],
            env: { SERVICE_TOKEN: MCP_ENV_SECRET },
          },
        },
      },
    });
  expect(created.status).toBe(201);
  const runId = (created.body as { run_id: string }).run_id;
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  expect(mcpHttp.calls).toContain('colour');

  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: `And once more ${marker}` });
  expect(followup.status).toBe(200);
  await logs.until(
    (e) => e.msg === 'run state changed' && e.run_id === runId && e.turn === 2 && e.state === 'SUCCEEDED',
    'the second turn to succeed',
    60_000,
  );
  expect((await ctx.api.get(`/api/v1/agent/runs?q=${QUERY_SECRET}`).set(auth(key))).status).toBe(200);
  await receiver.until((r) => r.length >= 6, 'the six state changes to be delivered');

  // One info line per state change, with the run, its turn and its state.
  expect(stateLines(runId).map((e) => [e.level, e.turn, e.state])).toEqual([
    ['info', 1, 'INPROGRESS'],
    ['info', 1, 'SUCCEEDED'],
    ['info', 2, 'INPROGRESS'],
    ['info', 2, 'SUCCEEDED'],
  ]);
  // The request line: request id, method, route template (not the path), status, duration.
  const requestId = created.headers['x-request-id'];
  const createLine = await logs.until((e) => e.msg === 'request' && e.request_id === requestId, 'the create request');
  expect(createLine).toMatchObject({ level: 'info', method: 'POST', route: '/api/v1/agent/runs', status: 201 });
  expect(createLine.duration_ms).toEqual(expect.any(Number));
  const followupLine = await logs.until(
    (e) => e.msg === 'request' && e.request_id === followup.headers['x-request-id'],
    'the follow-up request',
  );
  expect(followupLine).toMatchObject({ route: '/api/v1/agent/runs/:runId/followups', status: 200 });
  expect(JSON.stringify(followupLine)).not.toContain(runId);
  // Activity lines carry the run and its step; Temporal's own lines come through with the run.
  expect(logs.entries().some((e) => e.msg === 'model replied' && e.run_id === runId && e.step === 0)).toBe(true);
  expect(
    logs.entries().some((e) => e.sdk_component === 'worker' && e.run_id === runId && e.activity === 'runAgentStep'),
  ).toBe(true);

  const secrets = {
    'the personal API key': key,
    'the API key without its public prefix': key.slice('ark_'.length + 9),
    OPENAI_API_KEY: OPENAI_KEY,
    GIT_TOKEN,
    SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    'the database password': decodeURIComponent(new URL(ctx.stack.databaseUrl).password),
    'an MCP header': MCP_HEADER_TOKEN,
    'an MCP env value': MCP_ENV_SECRET,
    'the webhook secret': webhookSecret,
    'the webhook secret without its prefix': webhookSecret.slice('whsec_'.length),
    'a query string': QUERY_SECRET,
  };
  expect(logs.lines.length).toBeGreaterThan(20);
  for (const [what, secret] of Object.entries(secrets)) {
    expect(secret.length).toBeGreaterThan(8);
    const leaking = logs.lines.filter((line) => line.includes(secret));
    expect({ what, leaking }).toEqual({ what, leaking: [] });
  }
});

test('a cancelled run logs one line for it, without a stack, and nothing at warn or error', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cancel-logged');
  const never = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: never.promise }));
  const runId = await createRun(ctx, key, { prompt: `Think hard ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  expect((await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key))).status).toBe(200);
  await waitForState(ctx, key, runId, ['CANCELLED'], undefined, 10_000);
  // The step's activity reports how it ended (cancelled or failed) after the run recorded its state.
  await logs.until(
    (e) => e.run_id === runId && e.activity === 'runAgentStep' && /^Activity (completed|failed)/.test(e.msg),
    'the cancelled step to end',
  );

  const about = logs.entries().filter((e) => e.run_id === runId);
  expect(about.filter((e) => e.level === 'warn' || e.level === 'error')).toEqual([]);
  expect(about.filter((e) => e.level === 'info').map((e) => [e.msg, e.state])).toEqual([
    ['run state changed', 'INPROGRESS'],
    ['run state changed', 'CANCELLED'],
  ]);
  expect(logs.lines.filter((line) => line.includes(runId) && line.includes('"stack"'))).toEqual([]);
});

test('a request the key refuses is logged with the route it was for, not its path; no route is null', async () => {
  const runId = `run-${hex()}`;
  const refused = await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth('ark_nope'));
  expect(refused.status).toBe(401);
  const line = await logs.until((e) => e.request_id === refused.headers['x-request-id'], 'the refused request');
  expect(line).toMatchObject({ msg: 'request', level: 'info', route: '/api/v1/agent/runs/:runId', status: 401 });
  expect(JSON.stringify(line)).not.toContain(runId);

  const nowhere = await ctx.api.get(`/api/v1/nothing-${hex()}`);
  expect(nowhere.status).toBe(404);
  const missing = await logs.until((e) => e.request_id === nowhere.headers['x-request-id'], 'the 404');
  expect(missing).toMatchObject({ msg: 'request', route: null, status: 404 });
});

describe('the logger alone', () => {
  test('secret fields are redacted at any depth, secret values wherever they appear, errors keep name, message and stack', () => {
    const capture = new LogCapture();
    const config = loadConfig({
      OPENAI_API_KEY: OPENAI_KEY,
      DATABASE_URL: 'postgres://agent:db-password-4711@db.example.com/agent_runs',
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    });
    const logger = createLogger('debug', 'unit', { destination: capture, secretValues: [ENCRYPTION_KEY] });
    logger.info('config', { config });
    logger.info('request', { headers: { authorization: 'Bearer abc', cookie: 'sid=1' } });
    logger.child({ run_id: 'r1' }).warn('deep', {
      a: { b: { c: { d: { e: { mcp_servers: { kb: { headers: { 'X-Key': MCP_HEADER_TOKEN } } } } } } } },
    });
    logger.error('failed', {
      error: new Error(`cannot reach postgres://agent:db-password-4711@db/x with ${ENCRYPTION_KEY}`),
    });
    const [configLine, requestLine, deepLine, errorLine] = capture.entries();
    expect(JSON.stringify(configLine)).not.toContain(OPENAI_KEY);
    expect(JSON.stringify(configLine)).not.toContain(ENCRYPTION_KEY);
    expect(JSON.stringify(configLine)).not.toContain('db-password-4711');
    expect(requestLine!.headers).toBe(REDACTED);
    expect(deepLine).toMatchObject({ level: 'warn', run_id: 'r1' });
    expect(JSON.stringify(deepLine)).not.toContain(MCP_HEADER_TOKEN);
    expect(errorLine!.error).toMatchObject({ type: 'Error', stack: expect.stringContaining('logging.test.ts') });
    expect(JSON.stringify(errorLine)).not.toContain('db-password-4711');
    expect(JSON.stringify(errorLine)).not.toContain(ENCRYPTION_KEY);
    expect(capture.lines.join('\n')).toContain(REDACTED);
  });
});

describe('npm start port check', () => {
  test('a taken port is reported with the variable that changes it; free ones pass', async () => {
    const ports = {
      PORT: await freePort(),
      pg: await freePort(),
      dev: await freePort(),
      ui: await freePort(),
      http: await freePort(),
      metrics: await freePort(),
    };
    const config = loadConfig({
      PORT: String(ports.PORT),
      EMBEDDED_POSTGRES_PORT: String(ports.pg),
      TEMPORAL_DEV_PORT: String(ports.dev),
      TEMPORAL_UI_PORT: String(ports.ui),
      TEMPORAL_DEV_HTTP_PORT: String(ports.http),
      TEMPORAL_DEV_METRICS_PORT: String(ports.metrics),
    });
    expect(plannedPorts(config).map((p) => p.variable)).toEqual([
      'PORT',
      'EMBEDDED_POSTGRES_PORT',
      'TEMPORAL_DEV_PORT',
      'TEMPORAL_DEV_HTTP_PORT',
      'TEMPORAL_DEV_METRICS_PORT',
      'TEMPORAL_UI_PORT',
    ]);
    await expect(assertPortsFree(plannedPorts(config))).resolves.toBeUndefined();

    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(ports.dev, '127.0.0.1', resolve));
    try {
      const err = await assertPortsFree(plannedPorts(config)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PortUnavailableError);
      expect((err as Error).message).toMatch(
        new RegExp(`^Port ${ports.dev} for the Temporal dev server is already in use .*set TEMPORAL_DEV_PORT`),
      );
      expect((err as Error).message).not.toContain('\n');

      // Two taken: one error with a line for each, naming its variable, so one restart fixes both.
      const second = net.createServer();
      await new Promise<void>((resolve) => second.listen(ports.PORT, '127.0.0.1', resolve));
      try {
        const both = (await assertPortsFree(plannedPorts({ ...config, host: '127.0.0.1' })).then(
          () => undefined,
          (e: unknown) => e,
        )) as Error;
        expect(both).toBeInstanceOf(PortUnavailableError);
        const lines = both.message.split('\n');
        expect(lines[0]).toBe('2 ports cannot be had:');
        expect(lines[1]).toMatch(new RegExp(`^  Port ${ports.PORT} for the API is already in use .*set PORT`));
        expect(lines[2]).toMatch(
          new RegExp(`^  Port ${ports.dev} for the Temporal dev server .*set TEMPORAL_DEV_PORT`),
        );
      } finally {
        await new Promise<void>((resolve) => second.close(() => resolve()));
      }
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
    // With Temporal external, its ports are not ours to check.
    const external = loadConfig({ PORT: String(ports.PORT), TEMPORAL_ADDRESS: '127.0.0.1:7233', DATABASE_URL: 'x' });
    expect(plannedPorts(external).map((p) => p.variable)).toEqual(['PORT']);
    const twice = loadConfig({ PORT: String(ports.ui), TEMPORAL_UI_PORT: String(ports.ui) });
    await expect(assertPortsFree(plannedPorts(twice))).rejects.toThrow(
      `PORT and TEMPORAL_UI_PORT are both ${ports.ui}`,
    );
  });
});
