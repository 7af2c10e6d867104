import { followupSignal, runWorkflowId } from '../workflows/run-contract';
import { CONTINUE_AS_NEW_SUGGESTED_AT } from './stack/server-settings';
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

async function followup(c: TestContext, key: string, runId: string, message: string) {
  return c.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message });
}

const userMessages = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === 'user').map((m) => m.content);

test('a follow-up to a QUEUED run is delivered when the agent starts, right after the prompt', async () => {
  const queued = await createTestContext({ worker: false });
  try {
    const { key } = await queued.newTeamKey();
    const marker = uniqueName('queued');
    queued.model.script(marker, () => ({ text: 'done' }));
    const runId = await createRun(queued, key, { prompt: `Build it ${marker}` });
    const res = await followup(queued, key, runId, 'Also add tests');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      run_id: runId,
      state: 'QUEUED',
      followup_id: expect.any(String),
      outcome: 'queued_prompt',
    });

    await queued.startWorker();
    await waitForState(queued, key, runId, ['SUCCEEDED']);
    const calls = queued.model.calls(marker);
    expect(calls).toHaveLength(1);
    expect(userMessages(calls[0]!.messages)).toEqual([`Build it ${marker}`, 'Also add tests']);
  } finally {
    await queued.close();
  }
});

test('follow-ups sent while INPROGRESS join at the next step, in order, each exactly once', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('inprogress');
  const first = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: first.promise } : { text: `reply ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `Refactor ${marker}` });
  await ctx.model.waitForCalls(marker, 1);

  const messages = ['one', 'two', 'three', 'four', 'five'];
  const responses = await Promise.all(messages.map((m) => followup(ctx, key, runId, m)));
  for (const r of responses) {
    expect(r.body).toEqual({
      run_id: runId,
      state: 'INPROGRESS',
      followup_id: expect.any(String),
      outcome: 'live_session',
    });
  }
  expect(new Set(responses.map((r) => r.body.followup_id)).size).toBe(messages.length);
  const seqs = (await ctx.dataSource.query(`SELECT message FROM followups WHERE run_id = $1 ORDER BY seq`, [
    runId,
  ])) as {
    message: string;
  }[];
  first.release({ text: 'first reply' });

  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(2);
  const second = calls[1]!.messages;
  expect(second.slice(0, 2)).toEqual([
    { role: 'user', content: `Refactor ${marker}` },
    { role: 'assistant', content: 'first reply' },
  ]);
  expect(userMessages(second).slice(1)).toEqual(seqs.map((s) => s.message));
  expect(new Set(userMessages(second).slice(1))).toEqual(new Set(messages));

  const delivered = (await transcript(ctx, runId)).filter((e) => e.kind === 'followup');
  expect(delivered.map((e) => e.payload.message)).toEqual(seqs.map((s) => s.message));
  expect(run.request_usage).toEqual({ total_tokens: 20 });
  await recordReplayFixture(ctx, runId, 'followups-in-progress');
});

test('a follow-up after SUCCEEDED continues the same run and conversation: QUEUED again, then on', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('terminal');
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `Explain ${marker}` });
  const done = await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const res = await followup(ctx, key, runId, 'Go deeper');
  expect(res.body).toEqual({
    run_id: runId,
    state: 'QUEUED',
    followup_id: expect.any(String),
    outcome: 'handoff_execution',
  });
  const requeued = await getRun(ctx, key, runId);
  expect(['QUEUED', 'INPROGRESS', 'SUCCEEDED']).toContain(requeued.state);
  expect(Date.parse(requeued.updated_at as string)).toBeGreaterThan(Date.parse(done.updated_at as string));

  await waitFor(
    () =>
      ctx.dataSource.query(`SELECT payload FROM run_events WHERE run_id = $1 AND kind = 'state' ORDER BY id`, [runId]),
    (rows: { payload: { state: string } }[]) => rows.filter((r) => r.payload.state === 'SUCCEEDED').length === 2,
    'the second SUCCEEDED',
  );
  const again = await getRun(ctx, key, runId);
  expect(again.state).toBe('SUCCEEDED');
  expect(again.conversation_id).toBe(done.conversation_id);
  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(2);
  expect(calls[1]!.messages).toEqual([
    { role: 'user', content: `Explain ${marker}` },
    { role: 'assistant', content: 'answer 1' },
    { role: 'user', content: 'Go deeper' },
  ]);
  const states = (await transcript(ctx, runId)).filter((e) => e.kind === 'state').map((e) => e.payload.state);
  expect(states).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'QUEUED', 'INPROGRESS', 'SUCCEEDED']);
  await recordReplayFixture(ctx, runId, 'followup-after-succeeded');
});

test('after the idle window closes the workflow, a follow-up starts a new execution of the same run', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('idle');
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `Summarise ${marker}`, config: { idle_timeout_minutes: 0 } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const handle = ctx.client.workflow.getHandle(runWorkflowId(runId));
  const firstExecution = await waitFor(
    () => handle.describe(),
    (d) => d.status.name === 'COMPLETED',
    'the workflow to complete after its idle window',
  );

  expect((await followup(ctx, key, runId, 'And in French?')).body).toMatchObject({
    run_id: runId,
    state: 'QUEUED',
    outcome: 'handoff_execution',
  });
  await ctx.model.waitForCalls(marker, 2);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const latest = await handle.describe();
  expect(latest.runId).not.toBe(firstExecution.runId);
  expect(userMessages(ctx.model.calls(marker)[1]!.messages)).toEqual([`Summarise ${marker}`, 'And in French?']);
  await recordReplayFixture(ctx, runId, 'followup-after-idle-window');
});

test('a follow-up after FAILED continues the run', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('after-failed');
  ctx.model.script(marker, (_req, call) =>
    call === 1 ? { status: 400, error: 'prompt rejected' } : { text: 'recovered' },
  );
  const runId = await createRun(ctx, key, { prompt: `Try ${marker}` });
  const failed = await waitForState(ctx, key, runId, ['FAILED']);
  expect((failed.status_message as { message: string }).message).toContain('prompt rejected');
  await followup(ctx, key, runId, 'Try again, politely');
  await waitFor(
    () => getRun(ctx, key, runId),
    (run) => run.state === 'SUCCEEDED',
    'the run to succeed after the follow-up',
  );
  // The failure's message is gone; a SUCCEEDED run's status is the agent's answer.
  expect(Object.keys((await getRun(ctx, key, runId)).status_message ?? {})).toEqual(['message']);
  expect(JSON.stringify((await getRun(ctx, key, runId)).status_message)).not.toContain('prompt rejected');
});

test('a run whose history grew long while idle continues as new at the idle boundary, and the follow-up lands once', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('idle-can');
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `Idle long ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const handle = ctx.client.workflow.getHandle(runWorkflowId(runId));
  const firstExecution = (await handle.describe()).runId;
  // Signals with no follow-up behind them (a client retrying, say) wake the idle workflow and
  // change nothing, but each adds history, until the server suggests continuing as new.
  await waitFor(
    async () => {
      await handle.signal(followupSignal, { seq: 0 });
      return (await handle.describe()).historyLength;
    },
    (length) => length > CONTINUE_AS_NEW_SUGGESTED_AT,
    'the idle history to pass the continue-as-new threshold',
    60_000,
  );
  expect((await getRun(ctx, key, runId)).state).toBe('SUCCEEDED');
  expect((await followup(ctx, key, runId, 'after a long idle')).status).toBe(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 30_000);
  await waitFor(
    async () => ctx.model.calls(marker).length,
    (n) => n === 2,
    'the follow-up to be answered',
  );
  expect(userMessages(ctx.model.calls(marker)[1]!.messages)).toEqual([`Idle long ${marker}`, 'after a long idle']);
  expect((await handle.describe()).runId).not.toBe(firstExecution);
  await recordReplayFixture(ctx, runId, 'continue-as-new-at-idle-boundary');
});
