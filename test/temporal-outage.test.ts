import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { locateTemporalCli } from '../infra/temporal-cli';
import { startTemporalDevServer, type RunningDevServer } from '../infra/temporal-dev-server';
import { runWorkflowId } from '../workflows/run-contract';
import { freePort } from './helpers/free-port';
import { freeze } from './helpers/freeze';
import { parsePrometheusText, sampleValue } from './helpers/prometheus-text';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import {
  answeredDuring,
  countByKindAndStatus,
  expectOnlyOrderlyAnswers,
  startSteadyLoad,
  waitForLoadCreates,
} from './helpers/steady-load';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * Temporal frozen for a minute (SIGSTOP: what a hung host or a partition looks like to the API)
 * under a steady load of creates, follow-ups and reads: every request is answered within 10 s,
 * writes 503 resource_unavailable with Retry-After and change nothing, reads of PostgreSQL
 * answer 200, nothing answers 500, and two minutes after Temporal is back every accepted run
 * has finished, every accepted follow-up was delivered, and no run exists without its
 * workflow. The test brings its own Temporal server, so freezing it touches no other test.
 */
const OUTAGE_MS = 60_000;
let temporal: RunningDevServer;
let ctx: TestContext;

beforeAll(async () => {
  const source = await locateTemporalCli({ say: () => undefined });
  temporal = await startTemporalDevServer({
    source,
    namespace: 'default',
    port: await freePort(),
    uiPort: await freePort(),
    httpPort: await freePort(),
    metricsPort: await freePort(),
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

/** The API's agent_runs_temporal_reachable (NaN when it serves none). */
async function temporalReachable(): Promise<number> {
  const metrics = parsePrometheusText((await ctx.api.get('/metrics')).text);
  return metrics.types.has('agent_runs_temporal_reachable')
    ? sampleValue(metrics, 'agent_runs_temporal_reachable')
    : NaN;
}

test('a minute of Temporal frozen under load: 503s for writes, 200s for reads, no 500, nothing lost', async () => {
  expect(temporal.pid).toBeDefined();
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('outage');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const steered = await createRun(ctx, key, { prompt: `Steered ${marker}`, config: { idle_timeout_minutes: 10 } });
  await waitForState(ctx, key, steered, ['SUCCEEDED']);

  // An idle run, which a follow-up would reopen: one refused during the outage must leave it as it was.
  const idle = await createRun(ctx, key, { prompt: `Idle ${marker}`, config: { idle_timeout_minutes: 10 } });
  await waitForState(ctx, key, idle, ['SUCCEEDED']);
  const idleBefore = (await ctx.api.get(`/api/v1/agent/runs/${idle}`).set(auth(key))).body as unknown;

  const load = startSteadyLoad(ctx, key, { followupRunId: steered, prompt: `Load ${marker}` });
  await waitForLoadCreates(ctx, `Load ${marker}`, 'the load to create runs');
  const thaw = freeze(temporal.pid!);
  const frozenAt = Date.now();
  let ready;
  let strict;
  let refusedFollowup;
  let idleDuring;
  try {
    ready = await ctx.api.get('/readyz');
    strict = await ctx.api.get('/readyz?require=temporal');
    // The alerting gauge says it too (each API probes at most every 10 s, so within a few scrapes).
    await waitFor(temporalReachable, (v) => v === 0, 'agent_runs_temporal_reachable to say 0', 20_000);
    refusedFollowup = await ctx.api
      .post(`/api/v1/agent/runs/${idle}/followups`)
      .set(auth(key))
      .send({ message: 'refused' });
    idleDuring = (await ctx.api.get(`/api/v1/agent/runs/${idle}`).set(auth(key))).body as unknown;
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS)); // the outage itself
  } finally {
    thaw();
  }
  const thawedAt = Date.now();
  await waitForLoadCreates(ctx, `Load ${marker}`, 'creates to succeed again after the outage', {
    since: new Date(thawedAt),
    timeoutMs: 60_000,
  });
  const results = await load.stop();
  const during = answeredDuring(results, frozenAt, thawedAt);
  console.log(
    `Temporal outage (${OUTAGE_MS / 1000} s): all requests ${JSON.stringify(countByKindAndStatus(results))}; during the outage ${JSON.stringify(countByKindAndStatus(during))}`,
  );

  expect(refusedFollowup.status).toBe(503);
  // The same run, read from PostgreSQL alone; only its session link is signed afresh (a later expiry).
  expect(idleDuring).toEqual({ ...(idleBefore as object), session_link: expect.stringContaining('/sessions/') });
  // Reads are still served: the API stays ready, saying it accepts no runs; a strict probe fails.
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual({
    status: 'degraded',
    accepts_runs: false,
    checks: { database: 'ok', temporal: 'unavailable' },
  });
  expect(strict.status).toBe(503);
  expect(strict.body.checks).toEqual({ database: 'ok', temporal: 'unavailable' });
  expectOnlyOrderlyAnswers(results);
  const writesDuring = during.filter((r) => r.kind !== 'read');
  const readsDuring = during.filter((r) => r.kind === 'read');
  expect(writesDuring.length).toBeGreaterThan(20);
  expect(writesDuring.filter((r) => r.status !== 503)).toEqual([]);
  expect(readsDuring.length).toBeGreaterThan(20);
  expect(readsDuring.filter((r) => r.status !== 200)).toEqual([]);

  // Within two minutes of Temporal's return, everything accepted has happened, and only that.
  const accepted = results.filter((r) => r.kind === 'create' && r.status === 201).map((r) => r.runId!);
  const acceptedFollowups = results.filter((r) => r.kind === 'followup' && r.status === 200).length;
  await waitFor(
    async () =>
      (
        await ctx.dataSource.query(
          `SELECT count(*)::int AS n FROM runs WHERE run_id = ANY($1::uuid[]) AND state = 'SUCCEEDED'`,
          [accepted],
        )
      )[0].n as number,
    (n) => n === accepted.length,
    'every accepted run to succeed',
    120_000,
  ).catch(async (err: Error) => {
    // What the runs that did not get there are doing, for whoever reads the failure.
    const stuck = (await ctx.dataSource.query(
      `SELECT run_id, state, turn, updated_at, status_message FROM runs WHERE run_id = ANY($1::uuid[]) AND state <> 'SUCCEEDED'`,
      [accepted],
    )) as { run_id: string }[];
    const histories = await Promise.all(
      stuck.map(async (run) => {
        const description = await ctx.client.workflow
          .getHandle(runWorkflowId(run.run_id))
          .describe()
          .then((d) => `${d.status.name}, ${d.historyLength} events`)
          .catch((e: Error) => e.message);
        return { ...run, workflow: description };
      }),
    );
    throw new Error(`${err.message}\n${JSON.stringify(histories, null, 2)}`);
  });
  const followups = await waitFor(
    async () =>
      (
        await ctx.dataSource.query(
          `SELECT count(*)::int AS total, count(delivered_at)::int AS delivered FROM followups WHERE run_id = $1`,
          [steered],
        )
      )[0] as { total: number; delivered: number },
    (f) => f.delivered === f.total,
    'every accepted follow-up to be delivered',
    120_000,
  );
  expect(followups.total).toBe(acceptedFollowups);
  const rows = (await ctx.dataSource.query(
    `SELECT run_id FROM runs WHERE team_id = (SELECT team_id FROM runs WHERE run_id = $1)`,
    [steered],
  )) as { run_id: string }[];
  expect(rows.map((r) => r.run_id).sort()).toEqual([steered, idle, ...accepted].sort());
  const idleFollowups = (await ctx.dataSource.query(`SELECT 1 FROM followups WHERE run_id = $1`, [idle])) as unknown[];
  expect(idleFollowups).toEqual([]);
  const missing: string[] = [];
  for (const { run_id } of rows) {
    await ctx.client.workflow
      .getHandle(runWorkflowId(run_id))
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) missing.push(run_id);
        else throw err;
      });
  }
  expect(missing).toEqual([]);
  await waitFor(temporalReachable, (v) => v === 1, 'agent_runs_temporal_reachable to say 1 again', 30_000);
  const readyAfter = await ctx.api.get('/readyz?require=temporal');
  expect([readyAfter.status, readyAfter.body.status, readyAfter.body.accepts_runs]).toEqual([200, 'ready', true]);
  // The same two minutes for the steered run's last turn (a busy machine takes a while to drain
  // the workflow tasks that timed out during the freeze); on failure, show where it stands.
  await waitForState(ctx, key, steered, ['SUCCEEDED'], undefined, 120_000).catch(async (err: Error) => {
    const events = await transcript(ctx, steered);
    const pending = (await ctx.dataSource.query(`SELECT seq, delivered_at FROM followups WHERE run_id = $1`, [
      steered,
    ])) as unknown[];
    throw new Error(
      `${err.message}\nfollow-ups: ${JSON.stringify(pending)}\nlast events: ${JSON.stringify(events.slice(-8))}`,
    );
  });
}, 450_000);
