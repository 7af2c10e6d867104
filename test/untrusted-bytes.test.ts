import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { openStream } from './helpers/sse-client';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * Whatever the agent reads can carry bytes PostgreSQL cannot hold (U+0000, unpaired surrogates):
 * a binary file, a tool's output, a model's arguments and answer. A run goes on, and every place
 * that shows it (transcript, event stream, conversation, status) shows the rest of it as it was,
 * with U+0000 as ␀ and an unpaired surrogate as U+FFFD.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

test('NULs and binary bytes in command output, tool arguments and the answer: the run succeeds and shows them', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('nul');
  // `call` counts from 1.
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) {
      return {
        text: '',
        toolCalls: [
          {
            name: 'run_command',
            arguments: { command: "printf 'before\\000after\\n'; head -c 512 /dev/urandom; printf '\\nend\\n'" },
          },
        ],
      };
    }
    if (call === 2) {
      return {
        text: 'thinking \u0000 aloud \ud800',
        toolCalls: [{ name: 'write_file', arguments: { path: 'nul.txt', content: 'x\u0000y \udfff', '\u0000key': 1 } }],
      };
    }
    return { text: 'done \u0000 here' };
  });
  const runId = await createRun(ctx, key, { prompt: `Bytes ${marker}`, config: { idle_timeout_minutes: 0 } });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
  expect(run.state).toBe('SUCCEEDED');
  expect(run.status_message).toEqual({ message: 'done ␀ here' });
  // Each step ran once: no retry told the model that the worker stopped.
  expect(ctx.model.calls(marker)).toHaveLength(3);

  const entries = await transcript(ctx, runId);
  const command = entries.find((e) => e.kind === 'tool_call' && e.payload.name === 'run_command');
  expect(command?.payload).toMatchObject({ is_error: false, exit_code: 0 });
  expect(String(command?.payload.output)).toMatch(/^Exit code 0 in \d+ ms\.\nbefore␀after\n[\s\S]*\nend\n/);
  const written = entries.filter((e) => e.kind === 'tool_call' || e.kind === 'tool_call_started');
  expect(JSON.stringify(written)).toContain('x␀y \ufffd');
  expect(JSON.stringify(written)).toContain('"␀key"');
  expect(
    entries.find((e) => e.kind === 'assistant' && String(e.payload.text).startsWith('thinking'))?.payload.text,
  ).toBe('thinking ␀ aloud \ufffd');

  // The model's second request carried the command's output as stored.
  const second = ctx.model.calls(marker)[1]!;
  expect(JSON.stringify(second.messages)).toContain('before␀after');

  // The stream and the conversation serve the same entries.
  const stream = await openStream(`${ctx.baseUrl}/api/v1/agent/runs/${runId}/events`, auth(key));
  await stream.waitForEvent((e) => e.event === 'end');
  expect(stream.events.some((e) => e.event === 'tool_call' && e.data.includes('before␀after'))).toBe(true);
  const conversation = await ctx.api
    .get(`/api/v1/agent/conversations/${(await getRun(ctx, key, runId)).conversation_id as string}`)
    .set(auth(key));
  expect(conversation.status).toBe(200);
  expect(JSON.stringify(conversation.body)).toContain('before␀after');
});
