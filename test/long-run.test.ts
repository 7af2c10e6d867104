import { conversationFromEvents } from '../activities/agent-step-activities';
import { SUMMARY_INSTRUCTION } from '../activities/model/summary-request';
import { loadStepConversation } from '../activities/step-conversation';
import { latestDiffDigests } from '../db/run-event-reads';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const CONTEXT_TOKENS = 6000;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: { MODEL_CONTEXT_TOKENS: JSON.stringify({ 'openai/test-model': CONTEXT_TOKENS }), AGENT_MAX_STEPS: '300' },
  });
});
afterAll(async () => {
  await ctx?.close();
});

/** What a step reads to rebuild the conversation and compare diffs, timed. */
async function stepReads(runId: string): Promise<{ ms: number; messages: number }> {
  const started = process.hrtime.bigint();
  const { events } = await loadStepConversation(ctx.dataSource.manager, runId);
  await latestDiffDigests(ctx.dataSource.manager, runId);
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, messages: conversationFromEvents(events).length };
}

test('a 200-step run: every request fits the model context, the transcript keeps everything', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('long');
  const steps = 200;
  let readsAtTen: { ms: number; messages: number } | undefined;
  let runId = '';
  let call = 0;
  ctx.model.script(marker, async (req) => {
    if (req.system === SUMMARY_INSTRUCTION) return { text: `Summary of the long haul up to step ${call}.` };
    call += 1;
    if (call === 11) readsAtTen = await stepReads(runId);
    // Each step reads a skill of several kilobytes, so the conversation outgrows the context fast.
    return call < steps
      ? { text: `step ${call}`, toolCalls: [{ name: 'read_skill', arguments: { name: 'svc-platform' } }] }
      : { text: 'done after 200 steps' };
  });
  runId = await createRun(ctx, key, { prompt: `Long haul ${marker}`, config: { max_steps: 250 } });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 240_000);
  const readsAtTwoHundred = await stepReads(runId);

  const all = ctx.model.calls(marker);
  const calls = all.filter((r) => r.system !== SUMMARY_INSTRUCTION);
  expect(calls).toHaveLength(steps);
  const budgetChars = CONTEXT_TOKENS * 0.75 * 4;
  for (const request of all) {
    const chars = (request.system ?? '').length + request.messages.reduce((n, m) => n + m.content.length, 0);
    expect(chars).toBeLessThan(budgetChars);
  }
  // The latest request still has the prompt and the last exchange, with a summary of the rest.
  const last = calls[calls.length - 1]!.messages;
  expect(last[0]!.content).toBe(`Long haul ${marker}`);
  expect(last[1]!.content).toMatch(
    /^\[A summary of the next \d+ messages.*Summary of the long haul up to step 19\d\.\]$/s,
  );
  expect(last.at(-1)!.role).toBe('tool');
  // The transcript keeps every tool output in full.
  const tools = (await transcript(ctx, runId)).filter((e) => e.kind === 'tool_call');
  expect(tools).toHaveLength(steps - 1);
  expect(tools.every((t) => String(t.payload.output).length > 1000)).toBe(true);
  // After a summary, a step reads the prompt and what came after it, not the 400 messages of the run.
  expect(readsAtTwoHundred.messages).toBeLessThan(60);
  console.log(
    `step reads: at step 10 ${readsAtTen!.ms.toFixed(1)} ms (${readsAtTen!.messages} messages), at step 200 ${readsAtTwoHundred.ms.toFixed(1)} ms (${readsAtTwoHundred.messages} messages)`,
  );
}, 300_000);
