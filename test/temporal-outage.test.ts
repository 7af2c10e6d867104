import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { locateTemporalCli } from '../infra/temporal-cli';
import { startTemporalDevServer, type RunningDevServer } from '../infra/temporal-dev-server';
import { freePort } from './helpers/free-port';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * Temporal frozen (SIGSTOP: what a hung host or a partition looks like to the API): writes answer
 * 503 resource_unavailable with Retry-After within seconds and change nothing, reads of
 * PostgreSQL go on answering, /readyz says which dependency is down, and once Temporal is back
 * everything works again. The test brings its own Temporal server, so freezing it touches no
 * other test.
 */
let temporal: RunningDevServer;
let ctx: TestContext;

beforeAll(async () => {
  const source = await locateTemporalCli({ say: () => undefined });
  temporal = await startTemporalDevServer({
    source,
    namespace: 'default',
    port: await freePort(),
    uiPort: await freePort(),
    ui: false,
    logFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-runs-outage-')), 'temporal.log'),
  });
  ctx = await createTestContext({ temporalAddress: temporal.address, env: { TEMPORAL_RPC_TIMEOUT_SECONDS: '2' } });
}, 90_000);
afterAll(async () => {
  if (temporal?.pid) process.kill(temporal.pid, 'SIGCONT');
  await ctx?.close();
  await temporal?.stop();
});

const runCount = async (teamKey: string) =>
  ((await ctx.api.get('/api/v1/agent/runs').set(auth(teamKey)).expect(200)).body.runs as unknown[]).length;

test('with Temporal frozen, writes are 503 with Retry-After and change nothing; reads answer; afterwards all is well', async () => {
  expect(temporal.pid).toBeDefined();
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('outage');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const before = await createRun(ctx, key, { prompt: `Before ${marker}` });
  await waitForState(ctx, key, before, ['SUCCEEDED']);

  process.kill(temporal.pid!, 'SIGSTOP');
  try {
    const started = Date.now();
    const create = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: `During ${marker}` });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(create.status).toBe(503);
    expect(create.headers['retry-after']).toBeDefined();
    expect(create.body).toMatchObject({ error_code: 'resource_unavailable', retryable: true });

    const followup = await ctx.api
      .post(`/api/v1/agent/runs/${before}/followups`)
      .set(auth(key))
      .send({ message: 'during the outage' });
    expect(followup.status).toBe(503);

    // Nothing was half-done: no run without its workflow, no follow-up nobody will deliver.
    expect(await runCount(key)).toBe(1);
    const [{ count }] = (await ctx.dataSource.query(`SELECT count(*)::int AS count FROM followups WHERE run_id = $1`, [
      before,
    ])) as [{ count: number }];
    expect(count).toBe(0);
    expect((await ctx.api.get(`/api/v1/agent/runs/${before}`).set(auth(key))).status).toBe(200);

    const ready = await ctx.api.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ database: 'ok', temporal: 'unavailable' });
  } finally {
    process.kill(temporal.pid!, 'SIGCONT');
  }

  const after = await createRun(ctx, key, { prompt: `After ${marker}` });
  await waitForState(ctx, key, after, ['SUCCEEDED'], undefined, 60_000);
  expect((await ctx.api.get('/readyz')).status).toBe(200);
});
