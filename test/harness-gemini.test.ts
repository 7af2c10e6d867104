import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expectReplayRecordsOnce } from './helpers/harness-replay';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** Gemini CLI (`config.harness.type: "gemini"`) in the run's sandbox, against a scripted Gemini API. */

const PLATFORM_KEY = 'AIza-platform-key-for-gemini-tests';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { GEMINI_API_KEY: PLATFORM_KEY } });
});
afterAll(async () => {
  await ctx?.close();
});

const gemini = { harness: { type: 'gemini', model_id: 'gemini-2.5-flash' } };

test('a command Gemini CLI runs writes a file; its output is in the conversation; the provider gets the key, the sandbox none', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('gemini');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'run_shell_command', arguments: { command: 'echo hello > out.txt && cat out.txt && env' } },
          ],
        }
      : { text: 'Done: out.txt says hello.' },
  );
  const runId = await createRun(ctx, key, { prompt: `Write out.txt ${marker}`, config: gemini });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);

  expect(readFileSync(path.join(ctx.config.workspace.dir, runId, 'out.txt'), 'utf8')).toBe('hello\n');
  expect(run.status_message).toEqual({ message: 'Done: out.txt says hello.' });

  const calls = ctx.model.calls(marker);
  expect(calls.length).toBeGreaterThanOrEqual(2);
  expect(new Set(calls.map((c) => `${c.protocol} ${c.apiKey} ${c.model}`))).toEqual(
    new Set([`gemini ${PLATFORM_KEY} gemini-2.5-flash`]),
  );

  const events = await transcript(ctx, runId);
  const tool = events.find((e) => e.kind === 'tool_call')!;
  expect(tool.payload).toMatchObject({ name: 'run_shell_command', is_error: false });
  const output = tool.payload.output as string;
  expect(output).toContain('hello');
  expect(output).not.toContain(PLATFORM_KEY);
  expect(output).not.toMatch(/GIT_TOKEN|DATABASE_URL|AGENT_RUNS_SECRETS_KEY/);
  expect(output).toMatch(/^GEMINI_API_KEY=arg_/m);

  // Gemini CLI has no usage envelope in the official clients: tokens are counted on the run alone.
  const usage = await ctx.api.get(`/api/v1/agent/runs/${runId}/harness-usage`).set(auth(key));
  expect(usage.body).toEqual({
    available: false,
    run_id: runId,
    conversation_id: run.conversation_id,
    age_seconds: null,
    usage: null,
  });
  expect((run.request_usage as { total_tokens: number }).total_tokens).toBeGreaterThan(0);
});

test('a follow-up resumes the session: the second turn is sent the first', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('gemini-resume');
  const followup = `Now the second part ${uniqueName('f')}`;
  ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
  const runId = await createRun(ctx, key, { prompt: `First task ${marker}`, config: gemini });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const first = ctx.model.calls(marker).length;
  expect(
    (await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: followup })).status,
  ).toBe(200);
  await ctx.model.waitForCalls(marker, first + 1);
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
  const resumed = ctx.model.calls(marker)[first]!.messages.map((m) => `${m.role}: ${m.content}`);
  expect(resumed.some((m) => m.startsWith('user: ') && m.includes(`First task ${marker}`))).toBe(true);
  expect(resumed.some((m) => m.includes(`answer ${first}`))).toBe(true);
  expect(resumed.at(-1)).toContain(followup);
});

test("an interrupted invocation's output is recorded once, whatever part of it was recorded live, however often it is replayed", async () => {
  await expectReplayRecordsOnce(
    ctx,
    'gemini',
    (marker) => ({
      lines: [
        { type: 'init', session_id: `g-${marker}`, model: 'gemini-test' },
        { type: 'message', role: 'assistant', content: `one ${marker}` },
        { type: 'tool_use', tool_id: 'g1', tool_name: 'run_shell_command', parameters: { command: 'echo out' } },
        { type: 'tool_result', tool_id: 'g1', status: 'success', output: `out ${marker}` },
        { type: 'message', role: 'assistant', content: `two ${marker}` },
        { type: 'result', status: 'success', stats: { input_tokens: 10, output_tokens: 2 } },
      ],
      usage: { input_tokens: 10, output_tokens: 2 },
      entries: [
        ['assistant', `one ${marker}`],
        ['tool_call', `out ${marker}`],
        ['assistant', `two ${marker}`],
      ],
    }),
    4,
  );
});
