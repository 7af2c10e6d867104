import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expectReplayRecordsOnce } from './helpers/harness-replay';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** Codex CLI (`config.harness.type: "codex"`) in the run's sandbox, against a scripted OpenAI Responses API. */

const PLATFORM_KEY = 'sk-openai-platform-key-for-codex-tests';
type Status = { message: string; error_code: string };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { OPENAI_API_KEY: PLATFORM_KEY } });
});
afterAll(async () => {
  await ctx?.close();
});

const codex = { harness: { type: 'codex', reasoning_level: 'low' } };

test('a command Codex runs writes a file; its output is in the conversation; the provider gets the key, the sandbox none', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('codex');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [{ name: 'exec_command', arguments: { cmd: 'echo hello > out.txt && cat out.txt && env' } }],
        }
      : { text: 'Done: out.txt says hello.' },
  );
  const runId = await createRun(ctx, key, { prompt: `Write out.txt ${marker}`, config: codex });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);

  expect(readFileSync(path.join(ctx.config.workspace.dir, runId, 'out.txt'), 'utf8')).toBe('hello\n');
  expect(run.status_message).toEqual({ message: 'Done: out.txt says hello.' });
  expect(run.agent_config).toMatchObject({ harness: { type: 'codex', reasoning_level: 'low' } });

  const calls = ctx.model.calls(marker);
  expect(calls).toHaveLength(2);
  expect(calls.map((c) => [c.protocol, c.apiKey, c.stream])).toEqual([
    ['openai-responses', PLATFORM_KEY, true],
    ['openai-responses', PLATFORM_KEY, true],
  ]);
  expect(calls[1]!.messages.map((m) => m.content).join('\n')).toContain('hello');

  const events = await transcript(ctx, runId);
  const tool = events.find((e) => e.kind === 'tool_call')!;
  expect(tool.payload).toMatchObject({ is_error: false });
  const output = tool.payload.output as string;
  expect(output.startsWith('hello\n')).toBe(true);
  expect(output).not.toContain(PLATFORM_KEY);
  expect(output).not.toMatch(/GIT_TOKEN|DATABASE_URL|AGENT_RUNS_SECRETS_KEY|OPENAI_API_KEY/);
  expect(output).toMatch(/^AGENT_RUNS_GATEWAY_TOKEN=arg_/m);
  expect(events.filter((e) => e.kind === 'assistant').at(-1)!.payload).toMatchObject({
    text: 'Done: out.txt says hello.',
    model_id: expect.stringMatching(/^codex\//),
  });

  const usage = await ctx.api.get(`/api/v1/agent/runs/${runId}/harness-usage`).set(auth(key));
  expect(usage.status).toBe(200);
  expect(usage.body).toMatchObject({
    available: true,
    usage: {
      harness: 'CODEX',
      metricsVersion: 1,
      captureSequence: 1,
      snapshot: { payload: { usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) } } },
    },
  });
});

test('a follow-up resumes the thread: the second turn is sent the first', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('codex-resume');
  const followup = `Now the second part ${uniqueName('f')}`;
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `First task ${marker}`, config: codex });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(
    (await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: followup })).status,
  ).toBe(200);
  await ctx.model.waitForCalls(marker, 2);
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(run.status_message).toEqual({ message: 'answer 2' });
  const second = ctx.model.calls(marker)[1]!.messages.map((m) => `${m.role}: ${m.content}`);
  expect(second.some((m) => m.startsWith('user: ') && m.includes(`First task ${marker}`))).toBe(true);
  expect(second).toContain('assistant: answer 1');
  expect(second.at(-1)).toContain(followup);
});

test("the operator's key refused by the provider fails the run at once, with a clear error", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('codex-401');
  ctx.model.script(marker, () => ({ status: 401, error: 'Incorrect API key provided' }));
  const runId = await createRun(ctx, key, { prompt: `Hello ${marker}`, config: codex });
  const status = (await waitForState(ctx, key, runId, ['FAILED'], undefined, 60_000)).status_message as Status;
  expect(status.error_code).toBe('feature_not_available');
  expect(status.message).toContain("refused the service's key for Codex CLI (HTTP 401: Incorrect API key provided)");
});

test("an interrupted invocation's output is recorded once, whatever part of it was recorded live, however often it is replayed", async () => {
  await expectReplayRecordsOnce(
    ctx,
    'codex',
    (marker) => ({
      lines: [
        { type: 'thread.started', thread_id: `t-${marker}` },
        { type: 'item.completed', item: { id: 'i0', type: 'agent_message', text: `one ${marker}` } },
        { type: 'item.started', item: { id: 'c1', type: 'command_execution', command: 'echo out' } },
        {
          type: 'item.completed',
          item: {
            id: 'c1',
            type: 'command_execution',
            command: 'echo out',
            aggregated_output: `out ${marker}`,
            exit_code: 0,
          },
        },
        { type: 'item.completed', item: { id: 'i2', type: 'agent_message', text: `two ${marker}` } },
        { type: 'turn.completed', usage: { input_tokens: 10, output_tokens: 2 } },
      ],
      usage: { input_tokens: 10, output_tokens: 2 },
      entries: [
        ['assistant', `one ${marker}`],
        ['assistant', ''],
        ['tool_call', `out ${marker}`],
        ['assistant', `two ${marker}`],
      ],
    }),
    3,
  );
});
