import { startReconciler } from '../api/reconciler';
import { createLogger } from '../core/logger';
import { insertRunCopy } from './helpers/run-copies';
import { backdateRuns } from './helpers/quiet-runs';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

/** This file's runs look quiet for an hour (backdateRuns); those of files running beside it do not. */
const QUIET_HOURS = 1;

function reconciler() {
  // One pass decides at once; its own timer never fires in a test.
  return startReconciler({
    dataSource: ctx.dataSource,
    temporal: ctx.client,
    logger: createLogger('error', 'test'),
    intervalSeconds: 3600,
    quietSeconds: (QUIET_HOURS * 3600) / 2,
  });
}

const makeQuiet = (...runIds: string[]) => backdateRuns(ctx.dataSource, runIds, QUIET_HOURS);

test('a run whose workflow an operator terminated is recorded ERROR saying so, and a follow-up starts it again', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('terminated');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: held.promise } : { text: 'back again' }));
  const runId = await createRun(ctx, key, { prompt: `Terminate me ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await ctx.client.workflow.getHandle(runWorkflowId(runId)).terminate('operator cleaning up');
  expect((await getRun(ctx, key, runId)).state).toBe('INPROGRESS');
  await makeQuiet(runId);

  const r = reconciler();
  try {
    expect(await r.runOnce()).toContain(runId);
    // Running runs are left alone, and a second pass changes nothing.
    expect(await r.runOnce()).not.toContain(runId);
  } finally {
    await r.stop();
    held.release({ text: 'too late' });
  }
  const run = await getRun(ctx, key, runId);
  expect(run.state).toBe('ERROR');
  expect(run.status_message).toMatchObject({ error_code: 'internal_error', retryable: true });
  expect((run.status_message as { message: string }).message).toMatch(/was terminated/);

  await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: 'carry on' }).expect(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
});

test('a live run is not touched by the reconciler', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('alive');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: held.promise }));
  const runId = await createRun(ctx, key, { prompt: `Alive ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await makeQuiet(runId);
  const r = reconciler();
  try {
    expect(await r.runOnce()).not.toContain(runId);
  } finally {
    await r.stop();
  }
  held.release({ text: 'fine' });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
});

test('a run whose workflow never started (its create was answered 503) is removed; one that started is recorded ERROR', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const marker = uniqueName('orphan');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const template = await createRun(ctx, key, { prompt: `Template ${marker}` });
  await waitForState(ctx, key, template, ['SUCCEEDED']);
  // Rows as a failed create and a lost workflow leave them: copies of a real run, without a workflow.
  const copy = (overrides: Record<string, unknown>) => insertRunCopy(ctx.dataSource, template, overrides);
  const neverStarted = await copy({ state: 'QUEUED', turn: 1, started_at: null });
  const lost = await copy({ state: 'INPROGRESS', turn: 1 });
  await makeQuiet(neverStarted, lost);
  await ctx.dataSource.query(
    `INSERT INTO idempotency_records (principal_uid, scope, key, request_hash, response_status, response_body, response_headers)
     VALUES ($1, 'create-run', $2, 'h', 201, $3::jsonb, '{}'::jsonb)`,
    [uid, marker, JSON.stringify({ run_id: neverStarted, state: 'QUEUED' })],
  );

  const r = reconciler();
  try {
    // One NotFound is not taken for a lost workflow (a server back from an outage has answered so
    // for workflows it had): the next pass settles them.
    const first = await r.runOnce();
    expect(first).not.toContain(neverStarted);
    expect(first).not.toContain(lost);
    expect((await getRun(ctx, key, lost)).state).toBe('INPROGRESS');
    const settled = await r.runOnce();
    expect(settled).toEqual(expect.arrayContaining([neverStarted, lost]));
  } finally {
    await r.stop();
  }
  expect((await ctx.api.get(`/api/v1/agent/runs/${neverStarted}`).set(auth(key))).status).toBe(404);
  const records = (await ctx.dataSource.query(`SELECT 1 FROM idempotency_records WHERE key = $1`, [
    marker,
  ])) as unknown[];
  expect(records).toEqual([]);
  const run = await getRun(ctx, key, lost);
  expect(run.state).toBe('ERROR');
  expect((run.status_message as { message: string }).message).toMatch(/no longer exists in Temporal/);
});
