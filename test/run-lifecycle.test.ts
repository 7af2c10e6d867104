import { OzAPI } from 'oz-agent-sdk';
import { gate } from './helpers/scripted-model';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { sessionPagePath } from './helpers/session-links';
import { runWorkflowId } from '../workflows/run-contract';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

test('a run goes QUEUED → INPROGRESS → SUCCEEDED and its transcript holds prompt and reply', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const marker = uniqueName('lifecycle');
  const hold = gate<{ text: string; totalTokens: number }>();
  ctx.model.script(marker, () => ({ hold: hold.promise }));

  const created = await ctx.api
    .post('/api/v1/agent/runs')
    .set({ Authorization: `Bearer ${key}` })
    .send({
      prompt: `Fix the bug ${marker}`,
      config: { name: 'nightly', base_prompt: 'Be terse.' },
      metadata: { ci: 'yes' },
    });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ run_id: expect.any(String), task_id: created.body.run_id, state: 'QUEUED' });
  expect(created.headers.location).toBe(`/api/v1/agent/runs/${created.body.run_id}`);
  const runId = created.body.run_id as string;

  const seen = ['QUEUED'];
  const inProgress = await waitForState(ctx, key, runId, ['INPROGRESS'], seen);
  expect(inProgress.started_at).toEqual(expect.any(String));
  expect(inProgress.finished_at).toBeUndefined();
  expect(inProgress.session_link).toMatch(
    new RegExp(`^${ctx.baseUrl}/sessions/[A-Za-z0-9_-]{32}\\?expires=\\d+&signature=[A-Za-z0-9_-]{43}$`),
  );
  await ctx.model.waitForCalls(marker, 1);
  hold.release({ text: 'Fixed it.', totalTokens: 42 });

  const done = await waitForState(ctx, key, runId, ['SUCCEEDED'], seen);
  expect(seen).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED']);
  expect(Date.parse(done.finished_at as string)).toBeGreaterThanOrEqual(Date.parse(done.started_at as string));
  expect(done).toMatchObject({
    run_id: runId,
    task_id: runId,
    root_run_id: runId,
    title: `Fix the bug ${marker}`,
    prompt: `Fix the bug ${marker}`,
    source: 'API',
    metadata: { ci: 'yes' },
    creator: { uid, type: 'user' },
    agent_config: {
      name: 'nightly',
      model_id: 'openai/test-model',
      base_prompt: 'Be terse.',
      idle_timeout_minutes: 10,
    },
    request_usage: { total_tokens: 42 },
    is_run_type_cancellable: false,
  });
  expect(done.run_time).toMatch(/^PT/);
  expect(Date.parse(done.updated_at as string)).toBeGreaterThan(Date.parse(done.created_at as string));

  const request = ctx.model.calls(marker)[0]!;
  expect(request.model).toBe('test-model');
  expect(request.system).toMatch(/^Be terse\./);
  expect(request.messages).toEqual([{ role: 'user', content: `Fix the bug ${marker}` }]);
  expect(request.tools).toEqual(
    expect.arrayContaining(['run_command', 'read_file', 'write_file', 'edit_file', 'list_directory', 'read_skill']),
  );

  const events = await transcript(ctx, runId);
  expect(events.map((e) => (e.kind === 'state' ? `state:${String(e.payload.state)}` : e.kind))).toEqual([
    'prompt',
    'state:QUEUED',
    'state:INPROGRESS',
    'notice',
    'config',
    'assistant',
    'state:SUCCEEDED',
  ]);

  const page = await ctx.api.get(sessionPagePath(done.session_link));
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toMatch(/text\/html/);
  expect(page.text).toContain('Fixed it.');
  expect(page.text).toContain(`Fix the bug ${marker}`);
  await recordReplayFixture(ctx, runId, 'one-step');
});

test("the Temporal UI shows a run's title as its workflow's summary and its state as the current details, idle window included", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('metadata');
  const hold = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: hold.promise }));
  const title = `Temporal summary ${marker}`;
  const runId = await createRun(ctx, key, { prompt: `Wait ${marker}`, title, config: { idle_timeout_minutes: 30 } });
  await waitForState(ctx, key, runId, ['INPROGRESS']);
  const handle = ctx.client.workflow.getHandle(runWorkflowId(runId));
  const described = await handle.describe();
  expect(await described.staticSummary()).toBe(title);
  expect(await described.staticDetails()).toContain(`${ctx.baseUrl}/console/runs/${runId}`);
  // What the Temporal UI asks a running workflow for its current details.
  const details = async () =>
    (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
  expect(await details()).toBe('INPROGRESS');
  hold.release({ text: 'done' });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const idle = await waitFor(details, (d) => d.startsWith('SUCCEEDED, waiting'), 'the idle window in the details');
  const until = Date.parse(/until (\S+)$/.exec(idle)?.[1] ?? '');
  // Thirty minutes from the end of the turn, give or take the time this test took to look.
  expect(until - Date.now()).toBeGreaterThan(25 * 60_000);
  expect(until - Date.now()).toBeLessThanOrEqual(30 * 60_000);
  expect((await handle.describe()).status.name).toBe('RUNNING');
});

test('the transcript page escapes what the agent and the caller wrote', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('escape');
  ctx.model.script(marker, () => ({ text: '<script>alert(1)</script>' }));
  const runId = await createRun(ctx, key, { prompt: `<img src=x onerror=alert(2)> ${marker}` });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const page = await ctx.api.get(sessionPagePath(run.session_link));
  expect(page.text).not.toContain('<script>alert(1)');
  expect(page.text).not.toContain('<img src=x');
  expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
});

test('the official TypeScript client creates, reads, lists and cancels runs unchanged', async () => {
  const { key } = await ctx.newTeamKey();
  const client = new OzAPI({ apiKey: key, baseURL: `${ctx.baseUrl}/api/v1`, maxRetries: 0 });
  const marker = uniqueName('sdk');
  const hold = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: hold.promise }));

  const created = await client.agent.run({
    prompt: `SDK run ${marker}`,
    title: 'From the SDK',
    config: { name: 'sdk' },
  });
  expect(created.state).toBe('QUEUED');
  const item = await client.agent.runs.retrieve(created.run_id);
  expect(item.title).toBe('From the SDK');
  const listed = await client.agent.runs.list({ name: 'sdk', state: ['QUEUED', 'INPROGRESS'] });
  expect(listed.runs.map((r) => r.run_id)).toEqual([created.run_id]);
  expect(listed.page_info.has_next_page).toBe(false);

  await ctx.model.waitForCalls(marker, 1);
  const cancelled = await client.agent.runs.cancel(created.run_id);
  expect(cancelled).toBe(created.run_id);
  const run = await waitForState(ctx, key, created.run_id, ['CANCELLED']);
  expect((run.status_message as { message: string }).message).toMatch(/cancelled by user-/i);

  const missing = await client.agent.runs.retrieve('01a20148-bbe3-7f9b-a00a-640e2b639bda').catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(OzAPI.NotFoundError);
  expect(await getRun(ctx, key, created.run_id)).toMatchObject({ state: 'CANCELLED' });
});
