import {
  capSummary,
  fitToContext,
  requestBudget,
  requestTokens,
  summaryTokenLimit,
} from '../activities/model/context-window';
import { SUMMARY_INSTRUCTION, summaryRequest } from '../activities/model/summary-request';
import type { AgentMessage } from '../activities/model/types';
import type { ChatRequest } from './helpers/scripted-model';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const exchange = (i: number, output: string, text = `step ${i}`): AgentMessage[] => [
  { role: 'assistant', content: text, toolCalls: [{ id: `c${i}`, name: 'run_command', arguments: {} }] },
  { role: 'tool', toolCallId: `c${i}`, name: 'run_command', content: output, isError: false },
];

test('a conversation that fits is left as it is', () => {
  const messages: AgentMessage[] = [{ role: 'user', content: 'hello' }, ...exchange(1, 'ok')];
  const fitted = fitToContext('system', messages, [], 100_000);
  expect(fitted).toEqual({ messages, trimmedOutputs: 0, omittedMessages: 0 });
});

test('old tool outputs shrink first; the four most recent stay whole', () => {
  const messages: AgentMessage[] = [{ role: 'user', content: 'task' }];
  for (let i = 1; i <= 10; i++) messages.push(...exchange(i, `line one of ${i}\n${'x'.repeat(2000)}`));
  const fitted = fitToContext('system', messages, [], 6000);
  expect(fitted.omittedMessages).toBe(0);
  expect(fitted.summarise).toBeUndefined();
  expect(fitted.trimmedOutputs).toBeGreaterThan(0);
  const outputs = fitted.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  expect(outputs.slice(-4).every((o) => o.length > 2000)).toBe(true);
  expect(outputs[0]).toMatch(
    /^\[output shortened to fit the context window; \d+ characters in the transcript\. It began: line one of 1\]$/,
  );
  expect(requestTokens('system', fitted.messages, [])).toBeLessThanOrEqual(6000 * 0.75);
});

test('when shrinking is not enough, it asks for a summary; until there is one, whole exchanges go, every tool call keeps its result, and the first message says so', () => {
  const messages: AgentMessage[] = [{ role: 'user', content: 'task' }];
  for (let i = 1; i <= 30; i++) messages.push(...exchange(i, 'y'.repeat(10_000)));
  const fitted = fitToContext('system', messages, [], 12_000);
  // Never the last exchange.
  expect(fitted.summarise).toEqual({ from: 1, to: messages.length - 2 });
  expect(fitted.omittedMessages).toBeGreaterThan(0);
  expect(fitted.messages[0]!.content).toMatch(
    /^task\n\n\[Later in this conversation, \d+ earlier messages were left out/,
  );
  // Pairs intact: every assistant tool call is followed by its result.
  fitted.messages.forEach((m, i) => {
    if (m.role === 'assistant' && m.toolCalls?.length)
      expect(fitted.messages[i + 1]).toMatchObject({ role: 'tool', toolCallId: m.toolCalls[0]!.id });
    if (m.role === 'tool') expect(fitted.messages[i - 1]!.role).toBe('assistant');
  });
  // The last exchange is always there.
  expect(fitted.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'c30' });
  expect(requestTokens('system', fitted.messages, [])).toBeLessThanOrEqual(12_000 * 0.75);
});

test('a summary stands for the oldest exchanges with room to spare, and the next one extends it', () => {
  const context = 8000;
  const messages: AgentMessage[] = [{ role: 'user', content: 'task' }];
  // Long replies with short outputs: shortening outputs cannot help.
  for (let i = 1; i <= 30; i++) messages.push(...exchange(i, 'ok', `(step ${i}) ${'z'.repeat(1000)}`));
  const first = fitToContext('system', messages, [], context);
  const to = first.summarise!.to;
  expect(first.summarise!.from).toBe(1);
  // It ends where an exchange starts, and leaves several of the newest out of the summary.
  expect(messages[to]!.role).toBe('assistant');
  expect(to).toBeLessThan(messages.length - 6);

  const summarised = fitToContext('system', messages, [], context, { text: 'S1', to });
  expect(summarised.summarise).toBeUndefined();
  expect(summarised.omittedMessages).toBe(0);
  expect(summarised.messages).toEqual([
    messages[0],
    {
      role: 'user',
      content: expect.stringMatching(new RegExp(`^\\[A summary of the next ${to - 1} messages.*\\nS1\\]$`, 's')),
    },
    ...messages.slice(to),
  ]);
  expect(requestTokens('system', summarised.messages, [])).toBeLessThanOrEqual(requestBudget(context) / 2);

  // The conversation grows past the budget again: the next summary starts where this one ended.
  for (let i = 31; i <= 45; i++) messages.push(...exchange(i, 'ok', `(step ${i}) ${'z'.repeat(1000)}`));
  const later = fitToContext('system', messages, [], context, { text: 'S1', to });
  expect(later.summarise).toEqual({ from: to, to: expect.any(Number) });
  expect(later.messages[1]!.content).toContain('S1');

  // However long the summary the model wrote, it is cut to its limit.
  const long = fitToContext('system', messages, [], context, { text: 'w'.repeat(100_000), to: later.summarise!.to });
  expect(long.messages[1]!.content.length).toBeLessThan(summaryTokenLimit(context) * 4 + 200);
  expect(requestTokens('system', long.messages, [])).toBeLessThanOrEqual(requestBudget(context));
  expect(capSummary('short', context)).toBe('short');
});

test('the summarisation request fits the context and asks for a bounded reply', () => {
  const context = 8000;
  const messages = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].flatMap((i) => exchange(i, `out ${i} ${'o'.repeat(30_000)}`));
  const request = summaryRequest(`the task ${'t'.repeat(50_000)}`, 'the summary so far', messages, context);
  expect(request.system).toBe(SUMMARY_INSTRUCTION);
  expect(request.maxTokens).toBe(summaryTokenLimit(context));
  expect(requestTokens(request.system, request.messages, [])).toBeLessThanOrEqual(requestBudget(context));
  const content = request.messages[0]!.content;
  expect(content).toMatch(
    /^The task:\nthe task t+\n\[\.\.\. \d+ characters cut \.\.\.\]\nt+\n\nThe summary so far:\nthe summary so far\n\n/,
  );
  expect(content).toContain('Agent: step 1\n[calls run_command {}]\n\nResult of run_command: out 1 ');
  expect(content).toContain('Result of run_command: out 10 ');
});

describe('against the model', () => {
  const CONTEXT_TOKENS = 8000;
  const budgetChars = CONTEXT_TOKENS * 0.75 * 4;
  const isSummary = (r: ChatRequest) => r.system === SUMMARY_INSTRUCTION;
  const requestChars = (r: ChatRequest) =>
    (r.system ?? '').length + r.messages.reduce((n, m) => n + m.content.length, 0);

  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({
      env: { MODEL_CONTEXT_TOKENS: JSON.stringify({ 'openai/test-model': CONTEXT_TOKENS }) },
    });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  test('older exchanges are summarised by the model once, reused by later and retried steps, extended later; the transcript keeps everything', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('summarise');
    const steps = 24;
    let step = 0;
    let summaries = 0;
    let failedAfterSummary = false;
    ctx.model.script(marker, (req) => {
      if (isSummary(req)) {
        summaries += 1;
        return { text: `Summary ${summaries}: the agent listed the workspace.`, totalTokens: 1000 };
      }
      // The step after the first summary fails once: its retry must not summarise again.
      if (summaries === 1 && !failedAfterSummary) {
        failedAfterSummary = true;
        return { status: 500, error: 'flaky' };
      }
      step += 1;
      // Long replies, so the conversation outgrows the context in a few steps.
      return step < steps
        ? { text: `(step ${step}) ${'z'.repeat(2000)}`, toolCalls: [{ name: 'list_directory', arguments: {} }] }
        : { text: 'all done' };
    });
    const runId = await createRun(ctx, key, { prompt: `Keep going ${marker}` });
    const run = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);

    const calls = ctx.model.calls(marker);
    const summaryCalls = calls.filter(isSummary);
    expect(summaryCalls.length).toBeGreaterThanOrEqual(2);
    expect(calls.filter((r) => !isSummary(r))).toHaveLength(steps + 1);
    for (const request of calls) expect(requestChars(request)).toBeLessThan(budgetChars);
    for (const request of summaryCalls) {
      expect(request.tools).toEqual([]);
      expect(request.maxTokens).toBe(CONTEXT_TOKENS / 10);
      expect(request.messages[0]!.content).toContain(`Keep going ${marker}`);
    }

    // The failed step and its retry, and the step after, are shown the first summary, made once.
    const first = calls.findIndex(isSummary);
    for (const request of calls.slice(first + 1, first + 4)) {
      expect(isSummary(request)).toBe(false);
      expect(request.messages[0]!.content).toBe(`Keep going ${marker}`);
      expect(request.messages[1]!.content).toMatch(/^\[A summary of the next \d+ messages.*Summary 1: /s);
      expect(request.messages.map((m) => m.content).join('\n')).not.toContain('(step 1)');
    }
    // The second summary extends the first with newer exchanges only.
    const second = summaryCalls[1]!.messages[0]!.content;
    expect(second).toContain('The summary so far:\nSummary 1: ');
    expect(second).not.toContain('(step 1)');
    expect(calls.at(-1)!.messages[1]!.content).toContain(`Summary ${summaries}: `);

    const events = await transcript(ctx, runId);
    const recorded = events.filter((e) => e.kind === 'context_summary');
    expect(recorded).toHaveLength(summaryCalls.length);
    expect(recorded[1]!.payload).toMatchObject({
      from_message: recorded[0]!.payload.to_message,
      text: expect.stringMatching(/^Summary 2: /),
    });
    // Everything stays in the transcript, in full.
    const replies = events.filter((e) => e.kind === 'assistant');
    expect(replies).toHaveLength(steps);
    expect(replies.slice(0, -1).every((e, i) => e.payload.text === `(step ${i + 1}) ${'z'.repeat(2000)}`)).toBe(true);
    expect(events.filter((e) => e.kind === 'tool_call')).toHaveLength(steps - 1);
    // Summaries count toward the run's usage.
    const tokens = [...replies, ...recorded].reduce((n, e) => n + Number(e.payload.total_tokens), 0);
    expect(run.request_usage).toEqual({ total_tokens: tokens });
    expect(tokens).toBe(steps * 10 + summaryCalls.length * 1000);
  }, 90_000);

  test('when the model cannot summarise, older exchanges are left out and the run carries on', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('nosummary');
    const steps = 14;
    let step = 0;
    ctx.model.script(marker, (req) => {
      if (isSummary(req)) return { status: 400, error: 'no summaries today' };
      step += 1;
      return step < steps
        ? { text: `(step ${step}) ${'z'.repeat(2000)}`, toolCalls: [{ name: 'list_directory', arguments: {} }] }
        : { text: 'all done' };
    });
    const runId = await createRun(ctx, key, { prompt: `Keep going ${marker}` });
    await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);

    const calls = ctx.model.calls(marker);
    expect(calls.filter(isSummary).length).toBeGreaterThan(0);
    const last = calls.at(-1)!;
    expect(last.messages[0]!.content).toMatch(/earlier messages were left out to fit the context window/);
    for (const request of calls) expect(requestChars(request)).toBeLessThan(budgetChars);
    const events = await transcript(ctx, runId);
    expect(events.filter((e) => e.kind === 'context_summary')).toHaveLength(0);
    expect(events.filter((e) => e.kind === 'assistant')).toHaveLength(steps);
  }, 60_000);
});
