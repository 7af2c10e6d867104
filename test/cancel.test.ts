import { gate } from './helpers/scripted-model';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const cancel = (c: TestContext, key: string, runId: string) =>
  c.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key));

test('cancelling a QUEUED run: 200 with the run id, again while under way, then CANCELLED without a model call', async () => {
  const queued = await createTestContext({ worker: false });
  try {
    const { key, uid } = await queued.newTeamKey();
    const marker = uniqueName('cancel-queued');
    queued.model.script(marker, () => ({ text: 'should not happen' }));
    const runId = await createRun(queued, key, { prompt: `Wait ${marker}` });

    const first = await cancel(queued, key, runId);
    expect(first.status).toBe(200);
    // The whole body is the id, as text: what the official clients' `runs.cancel()` returns.
    expect(first.headers['content-type']).toMatch(/^text\/plain/);
    expect(first.text).toBe(runId);
    const second = await cancel(queued, key, runId);
    expect(second.status).toBe(200);

    await queued.startWorker();
    const run = await waitForState(queued, key, runId, ['CANCELLED']);
    expect((run.status_message as { message: string }).message).toContain(uid);
    // As docs/guide/using-the-api.md says: who cancelled, and no error_code (a cancel is no error).
    expect(run.status_message).toEqual({
      message: expect.stringMatching(new RegExp(`^Run cancelled by .*\\(${uid}\\)\\.$`)),
      retryable: false,
    });
    expect(queued.model.calls(marker)).toHaveLength(0);
    expect(run.is_run_type_cancellable).toBe(false);
  } finally {
    await queued.close();
  }
});

test('cancelling during a slow model call stops the call within seconds', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cancel-slow');
  const never = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: never.promise }));
  const runId = await createRun(ctx, key, { prompt: `Think hard ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  expect((await getRun(ctx, key, runId)).state).toBe('INPROGRESS');

  const started = Date.now();
  expect((await cancel(ctx, key, runId)).status).toBe(200);
  await waitForState(ctx, key, runId, ['CANCELLED'], undefined, 10_000);
  await waitFor(
    async () => ctx.model.aborted.includes(marker),
    (aborted) => aborted,
    'the model request to be aborted',
    10_000,
  );
  const cancelLatencyMs = Date.now() - started;
  expect(cancelLatencyMs).toBeLessThan(10_000);
  console.log(`cancel during model call: CANCELLED and request aborted after ${cancelLatencyMs} ms`);
  const states = (await transcript(ctx, runId)).filter((e) => e.kind === 'state').map((e) => e.payload.state);
  expect(states).toEqual(['QUEUED', 'INPROGRESS', 'CANCELLED']);
  await recordReplayFixture(ctx, runId, 'cancel-during-model-call');
});

test('a run in a terminal state cannot be cancelled (400 operation_not_supported) and is unchanged', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, { prompt: 'quick one' });
  const done = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const res = await cancel(ctx, key, runId);
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error_code: 'operation_not_supported', status: 400, retryable: false });
  expect(res.body.detail).toContain('SUCCEEDED');
  const after = await getRun(ctx, key, runId);
  expect(after.state).toBe('SUCCEEDED');
  expect(after.updated_at).toBe(done.updated_at);
});

test('a cancelled run continues with a follow-up', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('cancel-then-followup');
  const firstCall = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: firstCall.promise } : { text: 'resumed' }));
  const runId = await createRun(ctx, key, { prompt: `Long task ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await cancel(ctx, key, runId);
  await waitForState(ctx, key, runId, ['CANCELLED']);

  const res = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'Resume please' });
  expect(res.body).toEqual({
    run_id: runId,
    state: 'QUEUED',
    followup_id: expect.any(String),
    outcome: 'handoff_execution',
  });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(JSON.stringify(run.status_message)).not.toMatch(/cancel/i);
  expect(ctx.model.calls(marker)[1]!.messages.map((m) => m.content)).toEqual([`Long task ${marker}`, 'Resume please']);
  await recordReplayFixture(ctx, runId, 'followup-after-cancel');
});
