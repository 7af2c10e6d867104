import { databaseStateOf } from '../db/data-source';
import { freeze } from './helpers/freeze';
import { startPrivatePostgres, type PrivatePostgres } from './helpers/private-postgres';
import { createRun, transcript, waitForState } from './helpers/runs';
import {
  answeredDuring,
  countByKindAndStatus,
  expectOnlyOrderlyAnswers,
  startSteadyLoad,
  waitForLoadCreates,
} from './helpers/steady-load';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * PostgreSQL frozen for a minute (SIGSTOP of the server and every connection's process) under
 * a steady load: every request is answered within 10 s, 503 resource_unavailable with
 * Retry-After on everything that needs the database (at once, after a probe found it gone),
 * /readyz names it, and nothing answers 500. A step that meets the outage waits it out instead of
 * using up its retries (three here) or asking its model again,
 * and once the database is back every accepted run and follow-up goes through. The test brings
 * its own PostgreSQL, so freezing it touches no other test.
 */
const OUTAGE_MS = 60_000;

/** A check of the test's own: right after the thaw, a query may still wait behind the backlog. */
const count = async (sql: string, params: unknown[]): Promise<number> =>
  ((await ctx.dataSource.query(sql, params).catch(() => [{ n: -1 }])) as [{ n: number }])[0].n;
let postgres: PrivatePostgres;
let ctx: TestContext;

beforeAll(async () => {
  postgres = await startPrivatePostgres();
  ctx = await createTestContext({ databaseUrl: postgres.url, env: { DATABASE_QUERY_TIMEOUT_SECONDS: '3' } });
}, 90_000);
afterAll(async () => {
  await ctx?.close();
  await postgres?.stop();
});

test('a minute of PostgreSQL frozen under load: 503s, no 500, a step waits it out, nothing lost', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('pg-outage');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const steered = await createRun(ctx, key, { prompt: `Steered ${marker}`, config: { idle_timeout_minutes: 10 } });
  await waitForState(ctx, key, steered, ['SUCCEEDED']);

  // A step whose model answers once the database is frozen: recording the answer meets the outage.
  const stepMarker = uniqueName('mid-step');
  let frozen!: () => void;
  const databaseFrozen = new Promise<void>((resolve) => (frozen = resolve));
  ctx.model.script(stepMarker, async (_req, call) =>
    call === 1 ? { hold: databaseFrozen.then(() => ({ text: 'answered during the outage' })) } : { text: 'done' },
  );
  const midStep = await createRun(ctx, key, { prompt: `Mid-step ${stepMarker}`, config: { idle_timeout_minutes: 0 } });
  await ctx.model.waitForCalls(stepMarker, 1);

  const load = startSteadyLoad(ctx, key, { followupRunId: steered, prompt: `Load ${marker}` });
  await waitForLoadCreates(ctx, `Load ${marker}`, 'the load to create runs');
  const thaw = freeze(postgres.postmasterPid());
  const frozenAt = Date.now();
  let ready;
  let health;
  try {
    // The model answers once the worker knows the database is gone: recording the reply is
    // refused at once, with nothing sent that the server could still write when it comes back.
    await waitFor(
      async () => databaseStateOf(ctx.dataSource),
      (state) => state === 'unreachable',
      'the database gate to find PostgreSQL gone',
      30_000,
    );
    frozen();
    ready = await ctx.api.get('/readyz');
    health = await ctx.api.get('/healthz');
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS)); // the outage itself
  } finally {
    frozen(); // should the gate never have shut, the held reply still ends
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
    `PostgreSQL outage (${OUTAGE_MS / 1000} s): all requests ${JSON.stringify(countByKindAndStatus(results))}; during the outage ${JSON.stringify(countByKindAndStatus(during))}`,
  );

  expect(ready.status).toBe(503);
  expect(ready.body).toEqual({
    status: 'unavailable',
    accepts_runs: false,
    checks: { database: 'unavailable', temporal: 'ok' },
  });
  expect(JSON.stringify(ready.body)).not.toMatch(/timeout|ECONN|Error/);
  expect(health.status).toBe(200);
  expectOnlyOrderlyAnswers(results);
  expect(during.filter((r) => r.status !== 503)).toEqual([]);
  // Once a probe found the database gone, requests are refused at once instead of each waiting
  // out its own timeouts: three loops at 250 ms answer hundreds of times a minute, not dozens.
  const refusedByGate = during.filter((r) => r.detail === 'PostgreSQL is unreachable; retry later.');
  expect(refusedByGate.length).toBeGreaterThan(300);

  // The step met the outage and did not fail for it. Its reply, answered while the database was
  // gone, is the one recorded, once, and the model was never asked again: the step waited for
  // PostgreSQL to take the reply instead of being run again from the start.
  const run = await waitForState(ctx, key, midStep, ['SUCCEEDED'], undefined, 120_000);
  expect(run.state).toBe('SUCCEEDED');
  const replies = (await transcript(ctx, midStep)).filter((e) => e.kind === 'assistant');
  expect(replies.map((r) => r.payload.text)).toEqual(['answered during the outage']);
  expect(ctx.model.calls(stepMarker)).toHaveLength(1);
  expect(run.request_usage).toEqual({ total_tokens: replies[0]!.payload.total_tokens });

  const accepted = results.filter((r) => r.kind === 'create' && r.status === 201).map((r) => r.runId!);
  await waitFor(
    () =>
      count(`SELECT count(*)::int AS n FROM runs WHERE run_id = ANY($1::uuid[]) AND state = 'SUCCEEDED'`, [accepted]),
    (n) => n === accepted.length,
    'every accepted run to succeed',
    120_000,
  );
  const acceptedFollowups = results.filter((r) => r.kind === 'followup' && r.status === 200).length;
  const undelivered = `SELECT count(*)::int AS n FROM followups WHERE run_id = $1 AND delivered_at IS NULL`;
  await waitFor(
    () => count(undelivered, [steered]),
    (n) => n === 0,
    'every accepted follow-up to be delivered',
    120_000,
  );
  const recorded = await count(`SELECT count(*)::int AS n FROM followups WHERE run_id = $1`, [steered]);
  // A follow-up whose COMMIT was on its way when the database froze may have been applied though
  // the caller was told 503 (the commit's outcome is unknown; Idempotency-Key makes a retry safe).
  const inFlightAtFreeze = results.filter(
    (r) => r.kind === 'followup' && r.sentAt < frozenAt && r.answeredAt > frozenAt && r.status !== 200,
  ).length;
  expect(recorded).toBeGreaterThanOrEqual(acceptedFollowups);
  expect(recorded).toBeLessThanOrEqual(acceptedFollowups + inFlightAtFreeze);
  await waitForState(ctx, key, steered, ['SUCCEEDED']);
}, 330_000);
