import { UNFINISHED_TOOL_CALL } from '../activities/agent-step/conversation-from-events';
import { INTERRUPTED_MESSAGE } from '../workflows/run-contract';
import { WARP_CLIENT } from '../infra/python-client';
import { hostPidsRunning } from './helpers/host-processes';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { warpClientCalls } from './helpers/warp-client';

/**
 * `POST /agent/runs/{id}/interrupt` (and by conversation): the turn in progress stops — its model
 * call or its command — and ends SUCCEEDED saying so; the run stays and takes the next follow-up.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { ANTHROPIC_API_KEY: 'sk-ant-interrupt' } });
});
afterAll(async () => {
  await ctx?.close();
});

async function followup(key: string, runId: string, message: string) {
  const res = await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message });
  expect(res.status).toBe(200);
}

/** The run's turn ended as an interrupt ends it: SUCCEEDED, saying it was interrupted. */
async function expectInterrupted(key: string, runId: string) {
  const ended = await waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'], undefined, 20_000);
  expect([ended.state, ended.status_message]).toEqual(['SUCCEEDED', { message: INTERRUPTED_MESSAGE }]);
}

test(`${WARP_CLIENT}: interrupting a busy model call ends the turn, and the next follow-up goes on without it`, async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('interrupt-model');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: held.promise } : { text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `Think hard ${marker}`, config: { idle_timeout_minutes: 10 } });
  await ctx.model.waitForCalls(marker, 1);

  expect(await warpClientCalls(ctx.baseUrl, key, [{ call: 'agent.runs.interrupt', args: [runId] }])).toEqual([
    { ok: { run_id: runId } },
  ]);
  await expectInterrupted(key, runId);
  // The answer that comes too late is nobody's.
  held.release({ text: 'too late' });

  await followup(key, runId, 'Just say hi');
  await ctx.model.waitForCalls(marker, 2);
  const done = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(done.status_message).toEqual({ message: 'answer 2' });
  const second = ctx.model.calls(marker)[1]!.messages;
  expect(second.filter((m) => m.role !== 'system').map((m) => [m.role, m.content])).toEqual([
    ['user', `Think hard ${marker}`],
    ['user', 'Just say hi'],
  ]);
  const events = await transcript(ctx, runId);
  expect(events.filter((e) => e.kind === 'assistant').map((e) => e.payload.text)).toEqual(['answer 2']);
  await recordReplayFixture(ctx, runId, 'interrupt-during-model-call');
});

test('interrupting a busy command by its conversation stops the command; the model is told it did not finish', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('interrupt-command');
  const sleeper = `sleeper-${marker}`;
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: 'Waiting.',
          toolCalls: [{ name: 'run_command', arguments: { command: `exec -a ${sleeper} sleep 600` } }],
        }
      : { text: `answer ${call}` },
  );
  const runId = await createRun(ctx, key, { prompt: `Wait ${marker}`, config: { idle_timeout_minutes: 10 } });
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n > 0,
    'the sandboxed sleep to start',
    60_000,
  );
  const conversationId = (await getRun(ctx, key, runId)).conversation_id as string;

  const [accepted] = await warpClientCalls(ctx.baseUrl, key, [
    { call: 'agent.conversations.interrupt', args: [conversationId] },
  ]);
  expect(accepted).toEqual({ ok: { run_id: runId } });
  await expectInterrupted(key, runId);
  await waitFor(
    async () => hostPidsRunning(sleeper).length,
    (n) => n === 0,
    'the sleep to be gone',
    10_000,
  );

  await followup(key, runId, 'Never mind, say hi');
  await ctx.model.waitForCalls(marker, 2);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const second = ctx.model.calls(marker)[1]!.messages.filter((m) => m.role !== 'system');
  expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
  expect(second[2]!.content).toBe(UNFINISHED_TOOL_CALL);
  await recordReplayFixture(ctx, runId, 'interrupt-during-command');
});

test("interrupting a Claude Code turn stops it; the follow-up resumes Claude Code's session", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('interrupt-claude');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: held.promise } : { text: `claude answer ${call}` }));
  const runId = await createRun(ctx, key, {
    prompt: `Think ${marker}`,
    config: { harness: { type: 'claude' }, idle_timeout_minutes: 10 },
  });
  await ctx.model.waitForCalls(marker, 1);
  expect((await ctx.api.post(`/api/v1/agent/runs/${runId}/interrupt`).set(auth(key))).status).toBe(202);
  await expectInterrupted(key, runId);
  held.release({ text: 'too late' });

  await followup(key, runId, 'Answer now');
  await ctx.model.waitForCalls(marker, 2);
  const done = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(done.status_message).toEqual({ message: 'claude answer 2' });
  expect(
    ctx.model
      .calls(marker)[1]!
      .messages.map((m) => m.content)
      .join('\n'),
  ).toContain('Answer now');
});

test('only a run at work can be interrupted; another team cannot touch it', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('interrupt-ended');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const runId = await createRun(ctx, key, { prompt: `Hi ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const ended = await ctx.api.post(`/api/v1/agent/runs/${runId}/interrupt`).set(auth(key));
  expect([ended.status, ended.body.error_code]).toEqual([400, 'operation_not_supported']);
  expect(ended.body.detail).toContain('only an INPROGRESS run has a turn to interrupt');

  const other = await ctx.newTeamKey();
  const conversationId = (await getRun(ctx, key, runId)).conversation_id as string;
  for (const path of [
    `/api/v1/agent/runs/${runId}/interrupt`,
    `/api/v1/agent/conversations/${conversationId}/interrupt`,
  ]) {
    expect((await ctx.api.post(path).set(auth(other.key))).status).toBe(404);
  }
  expect((await getRun(ctx, key, runId)).state).toBe('SUCCEEDED');
});
