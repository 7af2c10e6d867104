import {
  AGENT_CLIENT,
  ensureAgentClient,
  ensureOldestClient,
  ensurePythonClient,
  ensureWarpClient,
  OLDEST_CLIENT,
  WARP_CLIENT,
} from '../infra/python-client';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { warpClientCalls, type WarpCall, type WarpResult } from './helpers/warp-client';
import { createFactory } from './helpers/factories';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * The newest official client (warp-platform-sdk 1.0.0) with strict response validation, method by
 * method (test/contract/warp_client_calls.py): each answers what its docstring says.
 */
let ctx: TestContext;
beforeAll(async () => {
  await Promise.all([ensureWarpClient(), ensureOldestClient(), ensurePythonClient(), ensureAgentClient()]);
  ctx = await createTestContext({
    env: {
      EGRESS_CIDRS: '203.0.113.7/24, 2001:DB8::1/48',
      MODEL_PRICES: '{"anthropic/claude-opus-4-1":{"input":15,"output":75}}',
    },
  });
}, 360_000);
afterAll(async () => {
  await ctx?.close();
});

async function calls(key: string, list: WarpCall[]): Promise<WarpResult[]> {
  return warpClientCalls(ctx.baseUrl, key, list);
}

test(`${WARP_CLIENT}: agent.list_models lists what this deployment can run, the default first`, async () => {
  const { key } = await ctx.newTeamKey();
  const [listed] = await calls(key, [{ call: 'agent.list_models' }]);
  expect(listed).toEqual({ ok: expect.objectContaining({ default_model_id: 'openai/test-model' }) });
  const { models } = (listed as { ok: { models: { id: string; provider: string; disable_reason?: string }[] } }).ok;
  // OpenAI's key is configured here, Anthropic's is not: no Anthropic model, not even a priced one.
  expect(models[0]).toMatchObject({ id: 'openai/test-model', provider: 'OPENAI', vision_supported: false });
  expect(models.map((m) => m.id)).toEqual(expect.arrayContaining(['openai/gpt-4o', 'openai/gpt-4.1-mini']));
  expect(models.filter((m) => m.provider !== 'OPENAI')).toEqual([]);
  expect(models.filter((m) => m.disable_reason)).toEqual([]);
});

test(`${WARP_CLIENT}: get_egress_ranges answers EGRESS_CIDRS, canonical`, async () => {
  const { key } = await ctx.newTeamKey();
  expect(await calls(key, [{ call: 'networking.get_egress_ranges' }])).toEqual([
    { ok: { cidrs: ['203.0.113.0/24', '2001:db8::/48'] } },
  ]);
});

/** A run that wrote and uploaded a screenshot and a notes file, and answered. */
async function finishedRun(key: string, marker: string) {
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: 'Taking a screenshot.',
          toolCalls: [
            {
              name: 'run_command',
              arguments: { command: 'printf "PNG-BYTES" > shot.png && printf "notes" > notes.txt' },
            },
          ],
        }
      : call === 2
        ? {
            text: '',
            toolCalls: [
              { name: 'upload_artifact', arguments: { filepath: 'shot.png', title: 'Screen' } },
              { name: 'upload_artifact', arguments: { filepath: 'notes.txt' } },
            ],
          }
        : { text: `All done ${marker}` },
  );
  const runId = await createRun(ctx, key, { prompt: `Take a screenshot ${marker}` });
  return waitForState(ctx, key, runId, ['SUCCEEDED']);
}

test(`${WARP_CLIENT}: a run's conversation, timeline, transcript and artifacts, and none of them for another team`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('surface');
  const run = await finishedRun(key, marker);
  const runId = run.run_id as string;
  const conversationId = run.conversation_id as string;
  const artifacts = (run.artifacts as { data: { artifact_uid: string; filename: string } }[]).map((a) => a.data);
  const shot = artifacts.find((a) => a.filename === 'shot.png')!.artifact_uid;
  const notes = artifacts.find((a) => a.filename === 'notes.txt')!.artifact_uid;
  const reads: WarpCall[] = [
    { call: 'agent.runs.get_conversation', args: [runId] },
    { call: 'agent.conversations.retrieve', args: [conversationId] },
    { call: 'agent.runs.get_timeline', args: [runId] },
    { call: 'agent.runs.get_transcript', args: [runId] },
    { call: 'agent.conversations.get_transcript', args: [conversationId] },
    { call: 'agent.download_artifact', args: [notes] },
    { call: 'agent.conversations.download_screenshot', args: [shot], kwargs: { conversation_id: conversationId } },
  ];
  const [conversation, retrieved, timeline, transcript, conversationTranscript, download, screenshot] = await calls(
    key,
    reads,
  );

  // One step for the one turn: the prompt, the agent's messages with its actions, their results.
  const steps = (conversation as { ok: { conversation_id: string; steps: Step[] } }).ok;
  expect(steps.conversation_id).toBe(conversationId);
  expect(steps.steps).toHaveLength(1);
  const [step] = steps.steps;
  expect(step).toMatchObject({
    id: `${runId}/t1`,
    description: `Take a screenshot ${marker}`,
    summary: `All done ${marker}`,
  });
  // The files the command wrote show as a system event after its result.
  expect(step!.messages.map((m) => m.role)).toEqual([
    'user',
    'assistant',
    'tool',
    'system',
    'assistant',
    'tool',
    'tool',
    'assistant',
  ]);
  expect(step!.messages[1]!.content).toEqual([
    expect.objectContaining({ type: 'text', text: 'Taking a screenshot.' }),
    expect.objectContaining({ type: 'action', category: 'command', name: 'run_command' }),
  ]);
  expect(step!.messages[3]!.content[0]).toMatchObject({ type: 'event', name: 'files_changed' });
  expect(step!.messages[2]!.content[0]).toMatchObject({
    type: 'action_result',
    state: 'completed',
    output: { exit_code: 0 },
  });
  expect((retrieved as { ok: { steps: Step[] } }).ok.steps).toEqual(steps.steps);

  const events = (timeline as { ok: { events: { event_type: string; execution_id: number }[] } }).ok.events;
  expect(events.map((e) => e.event_type)).toEqual([
    'oz_run_created',
    'oz_run_claimed',
    'worker_container_ready',
    'agent_started',
    'oz_run_done',
  ]);
  expect(new Set(events.map((e) => e.execution_id))).toEqual(new Set([1]));

  // The transcripts: followed redirects to signed JSON Lines, the run's entries in order.
  for (const got of [transcript, conversationTranscript]) {
    const { bytes, content_type } = (got as { ok: { bytes: string; content_type: string } }).ok;
    expect(content_type).toBe('application/x-ndjson');
    const lines = bytes
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { run_id: string; kind: string });
    expect(lines[0]).toMatchObject({ run_id: runId, kind: 'prompt' });
    expect(lines.filter((l) => l.kind === 'tool_call')).toHaveLength(3);
    expect(lines.at(-1)).toMatchObject({ kind: 'state' });
  }
  expect(download).toEqual({ ok: { bytes: 'notes', content_type: 'text/plain; charset=utf-8' } });
  expect(screenshot).toEqual({ ok: { bytes: 'PNG-BYTES', content_type: 'image/png' } });

  // The notes file is no screenshot; another team sees none of it.
  const [notScreenshot] = await calls(key, [
    { call: 'agent.conversations.download_screenshot', args: [notes], kwargs: { conversation_id: conversationId } },
  ]);
  expect(notScreenshot).toMatchObject({ error: 'NotFoundError', status: 404 });
  const other = await ctx.newTeamKey();
  const theirs = await calls(other.key, reads);
  expect(theirs.map((r) => ('status' in r ? r.status : r))).toEqual(reads.map(() => 404));
});

type Step = {
  id: string;
  messages: { role: string; content: Record<string, unknown>[] }[];
};

test(`${WARP_CLIENT}: follow-ups by run and by conversation say how they reach the run`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('surface-followup');
  const run = await finishedRun(key, marker);
  const runId = run.run_id as string;
  const [byRun] = await calls(key, [
    { call: 'agent.runs.submit_followup', args: [runId], kwargs: { message: 'More' } },
  ]);
  expect(byRun).toEqual({
    ok: { followup_id: expect.any(String), outcome: 'handoff_execution', run_id: runId, state: 'QUEUED' },
  });
  await ctx.model.waitForCalls(marker, 4);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const [byConversation] = await calls(key, [
    { call: 'agent.conversations.submit_followup', args: [run.conversation_id], kwargs: { message: 'Even more' } },
  ]);
  expect(byConversation).toEqual({
    ok: { followup_id: expect.any(String), outcome: 'handoff_execution', run_id: runId, state: 'QUEUED' },
  });
  await ctx.model.waitForCalls(marker, 5);
  expect(ctx.model.calls(marker)[4]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'Even more' });
  const other = await ctx.newTeamKey();
  expect(
    await calls(other.key, [
      { call: 'agent.conversations.submit_followup', args: [run.conversation_id], kwargs: { message: 'x' } },
      { call: 'agent.runs.submit_followup', args: [runId], kwargs: { message: 'x' } },
    ]),
  ).toEqual([expect.objectContaining({ status: 404 }), expect.objectContaining({ status: 404 })]);
});

test(`${WARP_CLIENT}: factories at /factory: listed, searched, read, and work dispatched for a ticket`, async () => {
  const { key, team } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }]);
  const name = ((await ctx.api.get(`/api/v1/agent/factories/${factory.uid}`).set(auth(key))).body as { name: string })
    .name;
  const marker = uniqueName('ticket');
  ctx.model.script(marker, () => ({ text: 'On it.' }));
  const teamUid = ((await ctx.dataSource.query(`SELECT id FROM teams WHERE name = $1`, [team])) as { id: string }[])[0]
    ?.id;
  const [listed, searched, missed, got, dispatched] = await calls(key, [
    { call: 'factories.list' },
    { call: 'factories.list', kwargs: { search: name.slice(-6).toUpperCase() } },
    { call: 'factories.list', kwargs: { search: 'no-such-factory' } },
    { call: 'factories.get', args: [factory.uid] },
    {
      call: 'factories.runs.create',
      args: [factory.uid],
      kwargs: {
        prompt: `Fix the login page ${marker}`,
        ticket_ref: ' Linear:APP-123 ',
        ticket_url: 'https://tracker.example.com/APP-123',
      },
    },
  ]);
  const uids = (r: WarpResult | undefined) => ((r as { ok: { uid: string }[] }).ok ?? []).map((f) => f.uid);
  expect(uids(listed)).toEqual([factory.uid]);
  expect(uids(searched)).toEqual([factory.uid]);
  expect(uids(missed)).toEqual([]);
  expect(got).toEqual({
    ok: expect.objectContaining({
      uid: factory.uid,
      name,
      code_forge: 'NONE',
      repositories: [],
      credential_strategy: 'CREATOR',
    }),
  });
  expect((got as { ok: { team_uid: string } }).ok.team_uid).toBe(teamUid);
  expect(teamUid).toEqual(expect.any(String));
  const run = (dispatched as { ok: { run_id: string; foreman_agent: string; ticket_ref: string; factory_uid: string } })
    .ok;
  // The reference in canonical form: its source in lower case, both parts trimmed.
  expect(run).toMatchObject({ factory_uid: factory.uid, ticket_ref: 'linear:APP-123', state: 'QUEUED' });
  expect(run.foreman_agent).toMatch(/^foreman-/);
  const done = await waitForState(ctx, key, run.run_id, ['SUCCEEDED']);
  expect(done.metadata).toEqual({
    ticket_source: 'linear',
    ticket_id: 'APP-123',
    ticket_url: 'https://tracker.example.com/APP-123',
  });
  expect((done.executor as { uid: string }).uid).toBe(factory.agents.FOREMAN);

  const other = await ctx.newTeamKey();
  const theirs = await calls(other.key, [
    { call: 'factories.list' },
    { call: 'factories.get', args: [factory.uid] },
    { call: 'factories.runs.create', args: [factory.uid], kwargs: { prompt: 'x' } },
  ]);
  expect(theirs).toEqual([
    { ok: [] },
    expect.objectContaining({ status: 404 }),
    expect.objectContaining({ status: 404 }),
  ]);
});

test(`${WARP_CLIENT}: work dispatched without a ticket gets an adhoc reference and its factory task, found at once by its run`, async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }]);
  const marker = uniqueName('adhoc');
  ctx.model.script(marker, () => ({ text: 'Done.' }));
  const idempotencyKey = uniqueName('adhoc-key');
  const dispatch: WarpCall = {
    call: 'factories.runs.create',
    args: [factory.uid],
    kwargs: {
      prompt: `Tidy the README ${marker}`,
      title: 'Tidy the README',
      extra_headers: { 'Idempotency-Key': idempotencyKey },
    },
  };
  const [created] = await calls(key, [dispatch]);
  const runId = (created as { ok: { run_id: string } }).ok.run_id;
  expect(created).toEqual({
    ok: expect.objectContaining({ run_id: runId, ticket_ref: `adhoc:${runId}`, state: 'QUEUED' }),
  });
  // In the same call as the create's answer, with no wait: the task is made with the run.
  const [byRun, replayed, board, ticketed, badRef] = await calls(key, [
    { call: 'factories.tasks.get_by_run', args: [factory.uid], kwargs: { run_id: runId } },
    dispatch,
    { call: 'factories.tasks.list', args: [factory.uid], kwargs: { full_list: true } },
    {
      call: 'factories.runs.create',
      args: [factory.uid],
      kwargs: { prompt: `Fix the login ${marker}`, ticket_ref: 'github:acme/app#12' },
    },
    {
      call: 'factories.runs.create',
      args: [factory.uid],
      kwargs: { prompt: `Nothing ${marker}`, ticket_ref: 'APP-9' },
    },
  ]);
  const task = (byRun as { ok: { uid: string } }).ok;
  expect(task).toMatchObject({
    factory_uid: factory.uid,
    run_id: runId,
    title: 'Tidy the README',
    stage: 'TRIAGE',
    ticket_source: 'adhoc',
    ticket_id: runId,
  });
  // A replay of the same request answers the same run and reference, and makes no second task.
  expect(replayed).toEqual(created);
  const ticketedRun = (ticketed as { ok: { run_id: string; ticket_ref: string } }).ok;
  expect(ticketedRun.ticket_ref).toBe('github:acme/app#12');
  expect((board as { ok: { uid: string; ticket_source?: string; ticket_id?: string }[] }).ok).toEqual([
    expect.objectContaining({ uid: task.uid, ticket_source: 'adhoc', ticket_id: runId }),
  ]);
  // A reference not in `<source>:<id>` form is refused, naming the field, and makes nothing.
  expect(badRef).toMatchObject({ status: 400, body: { detail: expect.stringContaining('ticket_ref') } });
  const [again] = await calls(key, [
    { call: 'factories.tasks.get_by_run', args: [factory.uid], kwargs: { run_id: ticketedRun.run_id } },
  ]);
  expect(again).toMatchObject({ ok: { ticket_source: 'github', ticket_id: 'acme/app#12' } });
  const runs = await ctx.api.get(`/api/v1/agent/runs?q=${marker}`).set(auth(key));
  expect((runs.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id).sort()).toEqual(
    [runId, ticketedRun.run_id].sort(),
  );
  const tasks = (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM factory_tasks WHERE factory_uid = $1`, [
    factory.uid,
  ])) as { n: number }[];
  expect(tasks[0]!.n).toBe(2);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  await waitForState(ctx, key, ticketedRun.run_id, ['SUCCEEDED']);
});

test(`${WARP_CLIENT}: a factory's task board: bind, list, move, find by run or conversation, cancel, delete`, async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }]);
  const marker = uniqueName('tasks');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (req) =>
    JSON.stringify(req.messages).includes('Keep working') ? { hold: held.promise } : { text: 'Done.' },
  );
  const done = await createRun(ctx, key, { prompt: `Write the spec ${marker}` });
  const doneRun = await waitForState(ctx, key, done, ['SUCCEEDED']);
  const busy = await createRun(ctx, key, { prompt: `Keep working ${marker}` });
  await ctx.model.waitForCalls(marker, 2);
  const busyRun = await getRun(ctx, key, busy);
  const uid = factory.uid;

  type TaskBody = { uid: string; stage: string; run_id: string; title: string; description?: string };
  const ok = <T = TaskBody>(r: WarpResult | undefined) => (r as { ok: T }).ok;
  const [specTask, again, busyTask] = await calls(key, [
    {
      call: 'factories.tasks.create',
      args: [uid],
      kwargs: { conversation_id: doneRun.conversation_id, title: 'Spec the login page', description: 'First draft' },
    },
    {
      call: 'factories.tasks.create',
      args: [uid],
      kwargs: { conversation_id: doneRun.conversation_id, title: 'Again' },
    },
    {
      call: 'factories.tasks.create',
      args: [uid],
      kwargs: { conversation_id: busyRun.conversation_id, title: 'Implement it', stage: 'IMPLEMENT' },
    },
  ]);
  expect(ok(specTask)).toMatchObject({
    stage: 'TRIAGE',
    run_id: done,
    title: 'Spec the login page',
    description: 'First draft',
  });
  expect(again).toMatchObject({ status: 409 });
  const spec = ok(specTask).uid;
  const impl = ok(busyTask).uid;

  const [all, implementing, searched, moved, byRun, byConversation] = await calls(key, [
    { call: 'factories.tasks.list', args: [uid], kwargs: { include_current_run: true } },
    { call: 'factories.tasks.list', args: [uid], kwargs: { stage: ['IMPLEMENT', 'REVIEW'] } },
    { call: 'factories.tasks.list', args: [uid], kwargs: { q: 'LOGIN' } },
    { call: 'factories.tasks.update', args: [spec], kwargs: { uid, stage: 'REVIEW', description: null } },
    { call: 'factories.tasks.get_by_run', args: [uid], kwargs: { run_id: done } },
    { call: 'factories.tasks.get_by_conversation', args: [uid], kwargs: { conversation_id: busyRun.conversation_id } },
  ]);
  const listed = ok<(TaskBody & { current_run?: { state: string } })[]>(all);
  expect(listed.map((t) => t.uid)).toEqual([impl, spec]);
  expect(listed.map((t) => t.current_run?.state)).toEqual(['INPROGRESS', 'SUCCEEDED']);
  expect(ok<TaskBody[]>(implementing).map((t) => t.uid)).toEqual([impl]);
  expect(ok<TaskBody[]>(searched).map((t) => t.uid)).toEqual([spec]);
  expect(ok(moved)).toMatchObject({ uid: spec, stage: 'REVIEW', title: 'Spec the login page' });
  expect(ok(moved).description).toBeUndefined();
  expect(ok(byRun).uid).toBe(spec);
  expect(ok(byConversation).uid).toBe(impl);

  // Cancelling the task cancels its run; deleting the other frees its conversation.
  const [cancelled] = await calls(key, [{ call: 'factories.tasks.cancel', args: [impl], kwargs: { uid } }]);
  expect(ok(cancelled)).toMatchObject({ uid: impl, stage: 'CANCELLED' });
  await waitForState(ctx, key, busy, ['CANCELLED']);
  held.release({ text: 'late' });
  const [deleted, gone, rebound] = await calls(key, [
    { call: 'factories.tasks.delete', args: [spec], kwargs: { uid } },
    { call: 'factories.tasks.get', args: [spec], kwargs: { uid } },
    {
      call: 'factories.tasks.create',
      args: [uid],
      kwargs: { conversation_id: doneRun.conversation_id, title: 'Spec, take two' },
    },
  ]);
  expect(deleted).toEqual({ ok: null });
  expect(gone).toMatchObject({ status: 404 });
  expect(ok(rebound)).toMatchObject({ stage: 'TRIAGE', title: 'Spec, take two' });

  // Another team: no board, and none of its conversations can be bound here.
  const other = await ctx.newTeamKey();
  const theirs = await calls(other.key, [
    { call: 'factories.tasks.list', args: [uid] },
    { call: 'factories.tasks.get', args: [impl], kwargs: { uid } },
    { call: 'factories.tasks.get_by_run', args: [uid], kwargs: { run_id: done } },
  ]);
  expect(theirs.map((r) => ('status' in r ? r.status : r))).toEqual([404, 404, 404]);
  const theirFactory = await createFactory(ctx, other.key, [{ type: 'FOREMAN' }]);
  const [foreign] = await calls(other.key, [
    {
      call: 'factories.tasks.create',
      args: [theirFactory.uid],
      kwargs: { conversation_id: busyRun.conversation_id, title: 'x' },
    },
  ]);
  expect(foreign).toMatchObject({ status: 400 });
});

test(`${OLDEST_CLIENT} reads runs as tasks: listed, filtered by its states, and read one by one`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('oldest');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (req) =>
    JSON.stringify(req.messages).includes('Stop me') ? { hold: held.promise } : { text: 'Done.' },
  );
  const done = await createRun(ctx, key, { prompt: `Answer ${marker}` });
  await waitForState(ctx, key, done, ['SUCCEEDED']);
  const stopped = await createRun(ctx, key, { prompt: `Stop me ${marker}` });
  await ctx.model.waitForCalls(marker, 2);
  expect((await ctx.api.post(`/api/v1/agent/runs/${stopped}/cancel`).set(auth(key))).status).toBe(200);
  await waitForState(ctx, key, stopped, ['CANCELLED']);
  held.release({ text: 'late' });

  const [all, failed, succeeded, one, missing] = await warpClientCalls(
    ctx.baseUrl,
    key,
    [
      { call: 'agent.tasks.list' },
      { call: 'agent.tasks.list', kwargs: { state: ['FAILED'] } },
      { call: 'agent.tasks.list', kwargs: { state: ['SUCCEEDED'], limit: 1 } },
      { call: 'agent.tasks.retrieve', args: [done] },
      { call: 'agent.tasks.retrieve', args: ['01a20000-0000-7000-8000-000000000000'] },
    ],
    'oldest',
  );
  type Listed = { tasks: { task_id: string; state: string; status_message?: { message: string } }[] };
  expect((all as { ok: Listed }).ok.tasks.map((t) => [t.task_id, t.state])).toEqual([
    [stopped, 'FAILED'],
    [done, 'SUCCEEDED'],
  ]);
  expect((failed as { ok: Listed }).ok.tasks.map((t) => t.task_id)).toEqual([stopped]);
  expect((failed as { ok: Listed }).ok.tasks[0]!.status_message!.message).toMatch(/^CANCELLED: /);
  expect((succeeded as { ok: Listed }).ok.tasks.map((t) => t.task_id)).toEqual([done]);
  expect(one).toEqual({
    ok: expect.objectContaining({ task_id: done, state: 'SUCCEEDED', prompt: `Answer ${marker}`, source: 'API' }),
  });
  expect(missing).toMatchObject({ status: 404 });
});

test(`${WARP_CLIENT}: a run that reported a pull request is found by its URL, however it is spelled`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('reference');
  const pr = `https://github.com/acme/app/pull/${Date.now() % 100000}`;
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: 'Opened the pull request.',
          toolCalls: [
            { name: 'report_external_reference', arguments: { url: pr, reference_type: 'pull_request' } },
            {
              name: 'report_external_reference',
              arguments: {
                url: `${pr.toUpperCase().replace('/ACME/APP/PULL', '/acme/app/pull')}/#top`,
                reference_type: 'pull_request',
                title: 'Fix login',
              },
            },
            { name: 'report_external_reference', arguments: { url: 'ftp://example.com/x' } },
          ],
        }
      : { text: 'Done.' },
  );
  const runId = await createRun(ctx, key, { prompt: `Open a PR ${marker}` });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.artifacts).toEqual([
    {
      artifact_type: 'EXTERNAL_REFERENCE',
      created_at: expect.any(String),
      data: { reference_type: 'pull_request', url: pr, title: 'Fix login' },
    },
  ]);
  const [found, spelled, unknown, invalidUrl, retrieved] = await calls(key, [
    { call: 'agent.get_run_by_external_reference', kwargs: { url: pr } },
    { call: 'agent.get_run_by_external_reference', kwargs: { url: `${pr}/` } },
    { call: 'agent.get_run_by_external_reference', kwargs: { url: 'https://github.com/acme/app/pull/0' } },
    { call: 'agent.get_run_by_external_reference', kwargs: { url: 'not a url' } },
    { call: 'agent.runs.retrieve', args: [runId] },
  ]);
  expect([found, spelled]).toEqual([{ ok: { run_id: runId } }, { ok: { run_id: runId } }]);
  expect([unknown, invalidUrl]).toMatchObject([{ status: 404 }, { status: 400 }]);
  expect(retrieved).toMatchObject({ ok: { artifacts: [{ artifact_type: 'EXTERNAL_REFERENCE' }] } });
  const listed = await ctx.api.get('/api/v1/agent/runs?artifact_type=EXTERNAL_REFERENCE').set(auth(key));
  expect((listed.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id)).toEqual([runId]);
  // The older client reads the same artifact.
  const [old] = await warpClientCalls(ctx.baseUrl, key, [{ call: 'agent.runs.retrieve', args: [runId] }], 'oz');
  expect(old).toMatchObject({ ok: { artifacts: [{ artifact_type: 'EXTERNAL_REFERENCE', data: { url: pr } }] } });
  const other = await ctx.newTeamKey();
  expect(await calls(other.key, [{ call: 'agent.get_run_by_external_reference', kwargs: { url: pr } }])).toMatchObject([
    { status: 404 },
  ]);
  const refused = (await transcript(ctx, runId)).find(
    (e) => e.kind === 'tool_call' && String(e.payload.output).includes('http or https'),
  );
  expect(refused?.payload.is_error).toBe(true);
});

test(`${AGENT_CLIENT}: all 12 of its methods, strictly validated`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('agent-sdk');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (req) =>
    JSON.stringify(req.messages).includes('Hold on') ? { hold: held.promise } : { text: 'Hello.' },
  );
  const client = (list: WarpCall[]) => warpClientCalls(ctx.baseUrl, key, list, 'agent');
  const [created, skills] = await client([
    { call: 'agent.run', kwargs: { prompt: `Say hello ${marker}`, title: 'Hello' } },
    { call: 'agent.list' },
  ]);
  const runId = (created as { ok: { run_id: string } }).ok.run_id;
  expect(skills).toEqual({ ok: { agents: [] } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const busy = await createRun(ctx, key, { prompt: `Hold on ${marker}` });
  await ctx.model.waitForCalls(marker, 2);
  const [retrieved, listed, cancelled, schedule] = await client([
    { call: 'agent.runs.retrieve', args: [runId] },
    { call: 'agent.runs.list', kwargs: { limit: 5 } },
    { call: 'agent.runs.cancel', args: [busy] },
    {
      call: 'agent.schedules.create',
      kwargs: { name: 'nightly', cron_schedule: '0 3 * * *', prompt: `Triage ${marker}`, enabled: false },
    },
  ]);
  expect(retrieved).toMatchObject({ ok: { run_id: runId, state: 'SUCCEEDED', title: 'Hello' } });
  expect(listed).toMatchObject({ ok: { runs: [{ run_id: busy }, { run_id: runId }] } });
  expect(cancelled).toEqual({ ok: busy });
  await waitForState(ctx, key, busy, ['CANCELLED']);
  held.release({ text: 'late' });
  const scheduleId = (schedule as { ok: { id: string } }).ok.id;
  const [got, updated, paused, resumed, all, deleted, gone] = await client([
    { call: 'agent.schedules.retrieve', args: [scheduleId] },
    {
      call: 'agent.schedules.update',
      args: [scheduleId],
      kwargs: { name: 'nightly', cron_schedule: '0 4 * * *', prompt: `Triage ${marker}`, enabled: false },
    },
    { call: 'agent.schedules.pause', args: [scheduleId] },
    { call: 'agent.schedules.resume', args: [scheduleId] },
    { call: 'agent.schedules.list' },
    { call: 'agent.schedules.delete', args: [scheduleId] },
    { call: 'agent.schedules.retrieve', args: [scheduleId] },
  ]);
  expect(got).toMatchObject({ ok: { id: scheduleId, cron_schedule: '0 3 * * *', enabled: false } });
  expect(updated).toMatchObject({ ok: { cron_schedule: '0 4 * * *' } });
  expect([paused, resumed]).toMatchObject([{ ok: { enabled: false } }, { ok: { enabled: true } }]);
  expect((all as { ok: { schedules: { id: string }[] } }).ok.schedules.map((s) => s.id)).toEqual([scheduleId]);
  expect(deleted).toMatchObject({ ok: expect.anything() });
  expect(gone).toMatchObject({ status: 404 });
});

test(`${WARP_CLIENT}: the rest of its methods (runs, skills, environments, artifacts, redirects, schedules, agents), strictly validated`, async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const marker = uniqueName('rest');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (req, call) =>
    JSON.stringify(req.messages).includes('Hold on')
      ? { hold: held.promise }
      : call === 1
        ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'printf notes > notes.txt' } }] }
        : call === 2
          ? { text: '', toolCalls: [{ name: 'upload_artifact', arguments: { filepath: 'notes.txt' } }] }
          : { text: 'Done.' },
  );
  const done = await createRun(ctx, key, { prompt: `Write notes ${marker}` });
  const run = await waitForState(ctx, key, done, ['SUCCEEDED']);
  const busy = await createRun(ctx, key, { prompt: `Hold on ${marker}` });
  await ctx.model.waitForCalls(marker, 4);
  const artifactUid = (run.artifacts as { data: { artifact_uid: string } }[])[0]!.data.artifact_uid;
  const results = await calls(key, [
    { call: 'agent.list' },
    { call: 'agent.list_environments' },
    { call: 'agent.get_artifact', args: [artifactUid] },
    { call: 'agent.runs.list', kwargs: { limit: 5 } },
    { call: 'agent.runs.retrieve', args: [done] },
    { call: 'agent.runs.list_handoff_attachments', args: [done] },
    { call: 'agent.runs.get_harness_usage', args: [done] },
    { call: 'agent.conversations.check_redirect', args: [run.conversation_id] },
    { call: 'agent.sessions.check_redirect', args: [run.session_id] },
    { call: 'agent.runs.cancel', args: [busy] },
  ]);
  const [skills, environments, artifact, runs, retrieved, handoff, usage, conversation, session, cancelled] = results;
  expect(results.filter((r) => !('ok' in r))).toEqual([]);
  expect(skills).toEqual({ ok: { agents: [] } });
  expect(environments).toMatchObject({ ok: expect.anything() });
  expect(artifact).toMatchObject({ ok: { artifact_uid: artifactUid, data: { filename: 'notes.txt' } } });
  expect((runs as { ok: { run_id: string }[] }).ok.map((r) => r.run_id)).toEqual([busy, done]);
  expect(retrieved).toMatchObject({ ok: { run_id: done, state: 'SUCCEEDED', root_run_id: done } });
  expect(handoff).toMatchObject({ ok: { attachments: expect.any(Array) } });
  expect(usage).toMatchObject({ ok: { run_id: done } });
  expect([conversation, session]).toMatchObject([{ ok: expect.anything() }, { ok: expect.anything() }]);
  expect(cancelled).toEqual({ ok: busy });
  await waitForState(ctx, key, busy, ['CANCELLED']);
  held.release({ text: 'late' });

  const [schedule, agent] = await calls(key, [
    {
      call: 'agent.schedules.create',
      kwargs: { name: 'nightly', cron_schedule: '0 3 * * *', prompt: `Triage ${marker}`, enabled: false },
    },
    { call: 'agent.agent.create', kwargs: { name: uniqueName('agent'), description: 'Reviews pull requests' } },
  ]);
  const scheduleId = (schedule as { ok: { id: string } }).ok.id;
  const agentUid = (agent as { ok: { uid: string } }).ok.uid;
  const more = await calls(key, [
    { call: 'agent.schedules.retrieve', args: [scheduleId] },
    {
      call: 'agent.schedules.update',
      args: [scheduleId],
      kwargs: { name: 'nightly', cron_schedule: '0 4 * * *', prompt: `Triage ${marker}`, enabled: false },
    },
    { call: 'agent.schedules.list' },
    { call: 'agent.schedules.pause', args: [scheduleId] },
    { call: 'agent.schedules.resume', args: [scheduleId] },
    { call: 'agent.schedules.delete', args: [scheduleId] },
    { call: 'agent.agent.get', args: [agentUid] },
    { call: 'agent.agent.list' },
    { call: 'agent.agent.update', args: [agentUid], kwargs: { description: 'Reviews everything' } },
    { call: 'agent.agent.delete', args: [agentUid] },
    { call: 'agent.agent.get', args: [agentUid] },
  ]);
  const [got, updated, listed, paused, resumed, deleted, agentGot, agents, agentUpdated, agentDeleted, agentGone] =
    more;
  expect(more.slice(0, 10).filter((r) => !('ok' in r))).toEqual([]);
  expect(got).toMatchObject({ ok: { id: scheduleId, cron_schedule: '0 3 * * *' } });
  expect(updated).toMatchObject({ ok: { cron_schedule: '0 4 * * *' } });
  expect(listed).toMatchObject({ ok: { schedules: [{ id: scheduleId }] } });
  expect([paused, resumed]).toMatchObject([{ ok: { enabled: false } }, { ok: { enabled: true } }]);
  expect(deleted).toMatchObject({ ok: expect.anything() });
  expect(agentGot).toMatchObject({ ok: { uid: agentUid, description: 'Reviews pull requests' } });
  expect(JSON.stringify(agents)).toContain(agentUid);
  // A partial update: the name, not sent, stays.
  expect(agentUpdated).toMatchObject({
    ok: { uid: agentUid, description: 'Reviews everything', name: (agent as { ok: { name: string } }).ok.name },
  });
  expect(agentDeleted).toEqual({ ok: null });
  expect(agentGone).toMatchObject({ status: 404 });
});

const FACTORY_TREE = [
  {
    path: '.agents/factories/bugfix/factory.yaml',
    content: 'schema_version: v1alpha1\nname: bugfix\ndescription: Fixes reported bugs.\n',
  },
  { path: '.agents/factories/bugfix/agents/lead/agent.md', content: '---\nagent_type: FOREMAN\n---\nLead the fix.\n' },
  {
    path: '.agents/factories/bugfix/agents/fixer/agent.md',
    content: '---\nagent_type: IMPLEMENT\nskills:\n  - acme/tools:lint\n---\nFix it.\n',
  },
];

test(`${WARP_CLIENT}: factory files: the schema documents and the validator that uses them, with no key`, async () => {
  // The client sends no key to these methods (their security is empty): any string will do.
  const [list, bundle, document, unknown, valid, invalid] = await calls('no key is sent', [
    { call: 'factories.files.schemas.list' },
    { call: 'factories.files.schemas.retrieve', args: ['v1alpha1'] },
    {
      call: 'factories.files.schemas.get_document',
      args: ['factory.schema.json'],
      kwargs: { schema_version: 'v1alpha1' },
    },
    { call: 'factories.files.schemas.retrieve', args: ['v9'] },
    { call: 'factories.files.validate', kwargs: { files: FACTORY_TREE } },
    {
      call: 'factories.files.validate',
      kwargs: {
        files: [
          { ...FACTORY_TREE[0]!, content: 'name: Bug Fix\ndescription: Fixes.\nowner: me\n' },
          { ...FACTORY_TREE[1]!, content: '---\nagent_type: REVIEW\n---\n' },
          { path: 'automations/nightly.yaml', content: 'cron: daily\n' },
        ],
      },
    },
  ]);
  expect(list).toEqual({
    ok: {
      current_version: 'v1alpha1',
      versions: [{ schema_version: 'v1alpha1', schema_url: '/api/v1/factory-files/schemas/v1alpha1' }],
    },
  });
  const documents = (bundle as { ok: { documents: Record<string, { $id: string; $schema: string }> } }).ok.documents;
  expect(Object.keys(documents).sort()).toEqual(['agent.schema.json', 'common.schema.json', 'factory.schema.json']);
  for (const [name, doc] of Object.entries(documents)) {
    expect(doc).toMatchObject({ $id: name, $schema: 'https://json-schema.org/draft/2020-12/schema' });
  }
  expect((document as { ok: unknown }).ok).toEqual(documents['factory.schema.json']);
  expect(unknown).toMatchObject({
    error: 'NotFoundError',
    status: 404,
    body: { detail: expect.stringContaining('v1alpha1') },
  });
  expect(valid).toEqual({
    ok: {
      valid: true,
      schema_version: 'v1alpha1',
      diagnostics: [],
      deferred_resolutions: [{ path: FACTORY_TREE[2]!.path, field: 'skills[0]', kind: 'skill' }],
      state_dependent_checks_not_run: expect.arrayContaining(['skills_resolve']),
      validation_scope: { parser: 'checked', state_independent: 'checked', state_dependent: 'not_checked' },
    },
  });
  expect((invalid as { ok: { valid: boolean; diagnostics: unknown[] } }).ok).toMatchObject({
    valid: false,
    validation_scope: { parser: 'checked', state_independent: 'not_run' },
    diagnostics: [
      {
        path: FACTORY_TREE[0]!.path,
        code: 'FF_INVALID_VALUE',
        line: 1,
        column: 7,
        message: expect.stringContaining('`name`'),
      },
      {
        path: FACTORY_TREE[0]!.path,
        code: 'FF_UNKNOWN_FIELD',
        line: 3,
        column: 1,
        message: expect.stringContaining('`owner`'),
      },
      { path: 'automations/nightly.yaml', code: 'FF_UNKNOWN_FILE', line: 1, column: 1 },
    ],
  });
});

test('factory files over HTTP: cacheable schemas (ETag, 304), a schema media type, bounded bodies, nothing for a key', async () => {
  const first = await ctx.api.get('/api/v1/factory-files/schemas/v1alpha1');
  expect(first.status).toBe(200);
  expect(first.headers.etag).toMatch(/^"[\w-]+"$/);
  const again = await ctx.api.get('/api/v1/factory-files/schemas/v1alpha1').set('If-None-Match', first.headers.etag!);
  expect(again.status).toBe(304);
  const doc = await ctx.api.get('/api/v1/factory-files/schemas/v1alpha1/agent.schema.json');
  expect(doc.headers['content-type']).toMatch(/^application\/schema\+json/);
  expect(JSON.parse(doc.text)).toMatchObject({ $id: 'agent.schema.json' });
  expect((await ctx.api.get('/api/v1/factory-files/schemas/v1alpha1/../../openapi.json')).status).toBe(404);
  expect((await ctx.api.get('/api/v1/factory-files/schemas/v1alpha1/constructor')).status).toBe(404);
  const tooBig = await ctx.api
    .post('/api/v1/factory-files/validate')
    .send({ files: [{ path: 'factory.yaml', content: 'x'.repeat(5 * 1024 * 1024) }] });
  expect(tooBig.status).toBe(413);
  const notAList = await ctx.api.post('/api/v1/factory-files/validate').send({ files: 'factory.yaml' });
  expect(notAList.status).toBe(400);
  expect(notAList.body.detail).toContain('files');
  // Validation reads no team's state: a key changes nothing about the answer.
  const { key } = await ctx.newTeamKey();
  const withKey = await ctx.api.post('/api/v1/factory-files/validate').set(auth(key)).send({ files: FACTORY_TREE });
  const without = await ctx.api.post('/api/v1/factory-files/validate').send({ files: FACTORY_TREE });
  expect(withKey.body).toEqual(without.body);
  expect(without.body.valid).toBe(true);
});

test(`${WARP_CLIENT}: every one of its 52 methods is driven by a test`, async () => {
  const script = path.join(__dirname, 'contract', 'warp_client_methods.py');
  const methods = JSON.parse((await promisify(execFile)(await ensureWarpClient(), [script])).stdout) as string[];
  expect(methods).toHaveLength(52);
  const driven = new Set<string>();
  for (const file of readdirSync(__dirname).filter((name) => name.endsWith('.test.ts'))) {
    for (const match of readFileSync(path.join(__dirname, file), 'utf8').matchAll(/call: '([\w.]+)'/g))
      driven.add(match[1]!);
  }
  expect(methods.filter((method) => !driven.has(method))).toEqual([]);
});
