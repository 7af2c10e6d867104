import supertest from 'supertest';
import { approvalSignal, runWorkflowId } from '../workflows/run-contract';
import { spawnApi, type ApiChild } from './helpers/api-processes';
import { auth, createRun, getRun, transcript, waitForState, type RunBody } from './helpers/runs';
import type { ChatRequest } from './helpers/scripted-model';
import { parsePrometheusText, sampleValue } from './helpers/prometheus-text';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { warpClientCalls } from './helpers/warp-client';
import { killWorker, spawnWorker, type WorkerChild } from './helpers/worker-processes';

/**
 * People in the loop: a call that `config.approval` gates, or an `ask_user` question, makes the
 * run BLOCKED until a person decides (or the deadline does); a blocked run holds no slot. The
 * worker has one run slot, so a run that finishes while another is blocked proves it.
 */

let ctx: TestContext;
let admin: { key: string; uid: string; team: string };
let member: { key: string };
beforeAll(async () => {
  ctx = await createTestContext({ env: { WORKER_MAX_CONCURRENT_RUNS: '1' } });
  admin = await ctx.newTeamKey('personal', undefined, 'admin');
  member = await ctx.newTeamKey('personal', admin.team);
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(240_000);

interface PendingApproval {
  approval_id: string;
  kind: string;
  tool?: string;
  arguments?: Record<string, unknown>;
  question?: string;
  expires_at: string;
}

/** A run whose first step makes `call`, then answers `done <marker>`; the script keeps every request. */
function scriptCall(marker: string, call: { name: string; arguments: Record<string, unknown> }) {
  ctx.model.script(marker, (_req, n) => (n === 1 ? { text: '', toolCalls: [call] } : { text: `done ${marker}` }));
}

async function blocked(key: string, runId: string): Promise<PendingApproval> {
  const run = await waitForState(ctx, key, runId, ['BLOCKED']);
  return run.pending_approval as PendingApproval;
}

const decide = (key: string, runId: string, approvalId: string, body: Record<string, unknown>) =>
  ctx.api.post(`/api/v1/agent/runs/${runId}/approvals/${approvalId}`).set(auth(key)).send(body);

/** The tool result the model was shown in its request after the call (the step's second request). */
async function toolResultShown(marker: string): Promise<string> {
  await ctx.model.waitForCalls(marker, 2);
  const second: ChatRequest = ctx.model.calls(marker)[1]!;
  return second.messages.filter((m) => m.role === 'tool').at(-1)!.content;
}

test('a command glob blocks the run; it holds no slot; only a person of the team decides, once; approved, the command runs', async () => {
  const marker = uniqueName('approve');
  const agent = await ctx.newTeamKey('agent', admin.team);
  scriptCall(marker, { name: 'run_command', arguments: { command: `echo shipped-${marker} && git status --short` } });
  const runId = await createRun(ctx, agent.key, {
    prompt: `Ship ${marker}`,
    config: { approval: { commands: ['echo shipped-*'], timeout_minutes: 60 } },
  });
  const pending = await blocked(agent.key, runId);
  expect(pending).toMatchObject({
    kind: 'tool_call',
    tool: 'run_command',
    arguments: { command: `echo shipped-${marker} && git status --short` },
  });
  const run = await getRun(ctx, admin.key, runId);
  expect(String((run.status_message as { message: string }).message)).toContain('echo shipped-*');
  // The run waits at no cost: its workspace given up, the one-slot worker has its slot free and
  // runs another run to the end; the API counts it blocked.
  await waitFor(
    async () => parsePrometheusText(await ctx.workerMetrics()),
    (m) => sampleValue(m, 'agent_runs_worker_run_slots', { state: 'free' }) === 1,
    "the blocked run to give up its worker's slot",
  );
  const scraped = parsePrometheusText((await ctx.api.get('/metrics')).text);
  expect(sampleValue(scraped, 'agent_runs_runs_blocked')).toBeGreaterThanOrEqual(1);
  const other = uniqueName('meanwhile');
  scriptCall(other, { name: 'run_command', arguments: { command: 'echo meanwhile' } });
  const otherId = await createRun(ctx, admin.key, { prompt: `Meanwhile ${other}` });
  await waitForState(ctx, admin.key, otherId, ['SUCCEEDED']);
  expect((await getRun(ctx, admin.key, runId)).state).toBe('BLOCKED');

  // Found by the list filter and in the timeline.
  const listed = await ctx.api.get('/api/v1/agent/runs?state=BLOCKED').set(auth(admin.key));
  expect((listed.body.runs as RunBody[]).map((r) => [r.run_id, r.pending_approval !== undefined])).toContainEqual([
    runId,
    true,
  ]);
  const timeline = await ctx.api.get(`/api/v1/agent/runs/${runId}/timeline`).set(auth(admin.key));
  expect((timeline.body.events as { event_type: string }[]).map((e) => e.event_type)).toContain('oz_run_blocked');

  // Refused, changing nothing: a member key (APPROVALS_MEMBERS_MAY_DECIDE unset), the run's own agent.
  const byMember = await decide(member.key, runId, pending.approval_id, { decision: 'approve' });
  expect([byMember.status, byMember.body.detail]).toEqual([
    403,
    expect.stringContaining('APPROVALS_MEMBERS_MAY_DECIDE'),
  ]);
  const byAgent = await decide(agent.key, runId, pending.approval_id, { decision: 'approve' });
  expect([byAgent.status, byAgent.body.detail]).toEqual([403, expect.stringContaining('own run')]);
  expect((await getRun(ctx, admin.key, runId)).state).toBe('BLOCKED');

  const approved = await decide(admin.key, runId, pending.approval_id, { decision: 'approve', comment: 'ship it' });
  expect(approved.status).toBe(200);
  expect(approved.body.run_id).toBe(runId);
  const again = await decide(admin.key, runId, pending.approval_id, { decision: 'deny' });
  expect([again.status, again.body.detail]).toEqual([409, expect.stringContaining('approved')]);

  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);
  await recordReplayFixture(ctx, runId, 'blocked-approved');
  // The provisioning after the decision never keeps the workspace given up while blocked, even
  // if its removal (which goes on meanwhile) has not run yet.
  const [first, afterDecision] = await provisioningsOf(runId);
  expect(first?.workspaceId).toBeDefined();
  expect(afterDecision?.input.discarded).toBe(first?.workspaceId);
  expect(await toolResultShown(marker)).toContain(`shipped-${marker}`);
  const entries = await transcript(ctx, runId);
  expect(entries.filter((e) => e.kind === 'approval').map((e) => e.payload)).toEqual([
    expect.objectContaining({ state: 'pending' }),
    expect.objectContaining({
      state: 'approved',
      comment: 'ship it',
      decided_by: expect.objectContaining({ uid: admin.uid }),
    }),
  ]);
  expect(entries.filter((e) => e.kind === 'state').map((e) => e.payload.state)).toEqual([
    'QUEUED',
    'INPROGRESS',
    'BLOCKED',
    'INPROGRESS',
    'SUCCEEDED',
  ]);
  const [audit] = (await ctx.dataSource.query(
    `SELECT outcome, details FROM audit_events WHERE action = 'approval.decide' AND resource_id = $1 AND outcome = 'success'`,
    [runId],
  )) as { outcome: string; details: Record<string, unknown> }[];
  expect(audit?.details).toEqual({ approval_id: pending.approval_id, decision: 'approve' });
  const metrics = parsePrometheusText((await ctx.api.get('/metrics')).text);
  expect(
    sampleValue(metrics, 'agent_runs_approval_decision_seconds_count', { outcome: 'approved' }),
  ).toBeGreaterThanOrEqual(1);
});

test('a tool glob blocks; denied, the model is told who denied it and why, and the call never ran', async () => {
  const marker = uniqueName('deny');
  scriptCall(marker, { name: 'write_file', arguments: { path: `denied-${marker}.txt`, content: 'x' } });
  const runId = await createRun(ctx, admin.key, {
    prompt: `Write ${marker}`,
    config: { approval: { tools: ['write_*'] } },
  });
  const pending = await blocked(admin.key, runId);
  expect(pending).toMatchObject({ kind: 'tool_call', tool: 'write_file' });
  const denied = await decide(admin.key, runId, pending.approval_id, { decision: 'deny', comment: 'not that file' });
  expect(denied.status).toBe(200);
  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);
  const shown = await toolResultShown(marker);
  expect(shown).toContain('denied');
  expect(shown).toContain(admin.uid);
  expect(shown).toContain('not that file');
  const started = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call_started');
  expect(started).toEqual([]);
});

test('ask_user waits for an answer; a follow-up answers it; the newest official client reads the BLOCKED run and finds it by task_status', async () => {
  const marker = uniqueName('ask');
  scriptCall(marker, { name: 'ask_user', arguments: { question: `Which colour for ${marker}?` } });
  const runId = await createRun(ctx, admin.key, { prompt: `Paint ${marker}` });
  const pending = await blocked(admin.key, runId);
  expect(pending).toMatchObject({ kind: 'question', question: `Which colour for ${marker}?` });
  const [read, listed] = await warpClientCalls(ctx.baseUrl, admin.key, [
    { call: 'agent.runs.retrieve', args: [runId] },
    { call: 'agent.runs.list', kwargs: { task_status: ['blocked'] } },
  ]);
  expect(read).toMatchObject({ ok: { state: 'BLOCKED' } });
  const found = (listed as { ok: { run_id: string; state: string }[] }).ok;
  expect(found.find((r) => r.run_id === runId)?.state).toBe('BLOCKED');
  expect(found.every((r) => r.state === 'BLOCKED')).toBe(true);

  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(admin.key))
    .send({ message: 'blue, please' });
  expect(followup.status).toBe(200);
  expect(followup.body).toMatchObject({ run_id: runId, outcome: 'live_session' });
  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);
  expect(await toolResultShown(marker)).toBe('blue, please');
  // The answer went to the question, not into the conversation as a follow-up.
  expect((await transcript(ctx, runId)).filter((e) => e.kind === 'followup')).toEqual([]);
});

test('the deadline denies a call as timed out; a decision after it is 409', async () => {
  const marker = uniqueName('deadline');
  scriptCall(marker, { name: 'run_command', arguments: { command: `deploy ${marker}` } });
  const runId = await createRun(ctx, admin.key, {
    prompt: `Deploy ${marker}`,
    config: { approval: { commands: ['deploy *'] } },
  });
  const pending = await blocked(admin.key, runId);
  // The default deadline is a day away: the test moves it into the past, then wakes the run as its timer would.
  expect(Date.parse(pending.expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
  await ctx.dataSource.query(
    `UPDATE run_approvals SET expires_at = clock_timestamp() - interval '1 second' WHERE approval_id = $1`,
    [pending.approval_id],
  );
  await ctx.client.workflow.getHandle(runWorkflowId(runId)).signal(approvalSignal);
  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);
  expect(await toolResultShown(marker)).toContain('timed out');
  const late = await decide(admin.key, runId, pending.approval_id, { decision: 'approve' });
  expect([late.status, late.body.detail]).toEqual([409, expect.stringContaining('timed out')]);
});

test('a blocked run is cancelled: its approval is cancelled with it', async () => {
  const marker = uniqueName('cancel');
  scriptCall(marker, { name: 'run_command', arguments: { command: `rm -rf /tmp/${marker}` } });
  const runId = await createRun(ctx, admin.key, {
    prompt: `Clean ${marker}`,
    config: { approval: { commands: ['*rm -rf*'] } },
  });
  const pending = await blocked(admin.key, runId);
  const cancel = await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(admin.key)).send({});
  expect(cancel.status).toBe(200);
  await waitForState(ctx, admin.key, runId, ['CANCELLED']);
  const [row] = (await ctx.dataSource.query(`SELECT state FROM run_approvals WHERE approval_id = $1`, [
    pending.approval_id,
  ])) as { state: string }[];
  expect(row?.state).toBe('cancelled');
  expect((await decide(admin.key, runId, pending.approval_id, { decision: 'approve' })).status).toBe(409);
  expect(ctx.model.calls(marker)).toHaveLength(1);
});

test('a policy on a harness whose CLI cannot be gated (Gemini CLI, Codex CLI) is refused, naming it', async () => {
  for (const [type, title] of [
    ['gemini', 'Gemini CLI'],
    ['codex', 'Codex CLI'],
  ]) {
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(admin.key))
      .send({ prompt: 'x', config: { harness: { type }, approval: { commands: ['git push*'] } } });
    expect([res.status, res.body.detail]).toEqual([400, expect.stringContaining(`${type} harness (${title})`)]);
  }
});

describe('the whole service killed while a run is blocked', () => {
  let other: TestContext;
  const processes: { apis: ApiChild[]; workers: WorkerChild[] } = { apis: [], workers: [] };
  beforeAll(async () => {
    other = await createTestContext({ worker: false });
  });
  afterAll(async () => {
    for (const w of processes.workers) await killWorker(w);
    for (const a of processes.apis) a.proc.kill('SIGKILL');
    await other?.close();
  });

  test('kill -9 of the API and the worker, both started again: the approval decides and the run finishes', async () => {
    const key = (await other.newTeamKey('personal', undefined, 'admin')).key;
    const marker = uniqueName('killed');
    other.model.script(marker, (_req, n) =>
      n === 1
        ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: `echo survived-${marker}` } }] }
        : { text: `done ${marker}` },
    );
    processes.workers.push(spawnWorker(other));
    let api = await spawnApi(other);
    processes.apis.push(api);
    const created = await supertest(api.baseUrl)
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: `Survive ${marker}`, config: { approval: { commands: ['echo survived-*'] } } });
    expect(created.status).toBe(201);
    const runId = created.body.run_id as string;
    const read = (base: string) =>
      supertest(base)
        .get(`/api/v1/agent/runs/${runId}`)
        .set(auth(key))
        .then((r) => r.body as RunBody);
    const blockedRun = await waitFor(
      () => read(api.baseUrl),
      (r) => r.state === 'BLOCKED',
      'the run to block',
      60_000,
    );
    // Killed once the run waits (its workspace given up, its workflow on the decision's timer): a
    // worker killed in the middle of an activity holds the run for that activity's timeout.
    const handle = other.client.workflow.getHandle(runWorkflowId(runId));
    await waitFor(
      async () => (await handle.fetchHistory()).events?.some((e) => e.timerStartedEventAttributes) ?? false,
      (waiting) => waiting,
      "the run's workflow to wait for the decision",
      60_000,
    );

    for (const w of processes.workers) await killWorker(w);
    api.proc.kill('SIGKILL');
    processes.workers.push(spawnWorker(other));
    api = await spawnApi(other);
    processes.apis.push(api);

    const approvalId = (blockedRun.pending_approval as PendingApproval).approval_id;
    const approved = await supertest(api.baseUrl)
      .post(`/api/v1/agent/runs/${runId}/approvals/${approvalId}`)
      .set(auth(key))
      .send({ decision: 'approve' });
    expect(approved.status).toBe(200);
    await waitFor(
      () => read(api.baseUrl),
      (r) => r.state === 'SUCCEEDED',
      'the run to finish',
      120_000,
    ).catch((err: unknown) => {
      const worker = processes.workers.at(-1)!;
      throw new Error(`${String(err)}\nAPI:\n${api.output.join('')}\nworker:\n${worker.output.join('')}`);
    });
    await other.model.waitForCalls(marker, 2);
    const shown = other.model
      .calls(marker)[1]!
      .messages.filter((m) => m.role === 'tool')
      .at(-1)!.content;
    expect(shown).toContain(`survived-${marker}`);
  });
});

/** Each provisioning of the run's workspace: what the workflow asked and the workspace it got. */
async function provisioningsOf(runId: string): Promise<{ input: { discarded?: string }; workspaceId?: string }[]> {
  const history = await ctx.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
  const json = (payloads?: { data?: Uint8Array | null }[] | null) =>
    JSON.parse(Buffer.from(payloads?.[0]?.data ?? []).toString('utf8')) as Record<string, unknown>;
  const byScheduledId = new Map<string, { input: { discarded?: string }; workspaceId?: string }>();
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'provisionEnvironment') {
      byScheduledId.set(String(e.eventId), { input: json(scheduled.input?.payloads) });
    }
    const completed = e.activityTaskCompletedEventAttributes;
    const provisioning = completed && byScheduledId.get(String(completed.scheduledEventId));
    if (provisioning) provisioning.workspaceId = json(completed.result?.payloads).workspaceId as string;
  }
  return [...byScheduledId.values()];
}
