import { conversationFromEvents } from '../activities/agent-step-activities';
import { fitConversation } from '../activities/model/context-summary';
import { fitToContext } from '../activities/model/context-window';
import { SUMMARY_INSTRUCTION, summaryRequest } from '../activities/model/summary-request';
import type { ModelProvider, ModelRequest } from '../activities/model/types';
import { CONVERSATION_KINDS, loadStepConversation } from '../activities/step-conversation';
import { createLogger } from '../core/logger';
import { latestContextSummary } from '../db/context-summaries';
import { appendRunEvent } from '../db/run-events';
import { loadRunEvents } from '../db/run-event-reads';
import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const CONTEXT_TOKENS = 8000;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: { MODEL_CONTEXT_TOKENS: JSON.stringify({ 'openai/test-model': CONTEXT_TOKENS }) },
  });
});
afterAll(async () => {
  await ctx?.close();
});

/** A finished run whose transcript the test then extends by hand. */
async function newRun(prompt: string): Promise<string> {
  const { key } = await ctx.newTeamKey();
  ctx.model.script(prompt, () => ({ text: 'ok' }));
  const runId = await createRun(ctx, key, { prompt });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  return runId;
}

describe('a step reading only what follows the latest summary', () => {
  const system = 'system';
  const summaryRequests: ModelRequest[] = [];
  const summariser: ModelProvider = {
    complete(request) {
      summaryRequests.push(request);
      return Promise.resolve({
        text: `Summary ${summaryRequests.length}`,
        toolCalls: [],
        inputTokens: 1,
        outputTokens: 1,
      });
    },
  };

  /** What the previous release read and sent: the whole conversation, with the latest summary. */
  async function wholeConversation(runId: string) {
    const events = await loadRunEvents(ctx.dataSource.manager, runId, {
      kinds: CONVERSATION_KINDS,
      withoutFullOutput: true,
    });
    const messages = conversationFromEvents(events);
    const summary = await latestContextSummary(ctx.dataSource.manager, runId);
    const sent = fitToContext(
      system,
      messages,
      [],
      CONTEXT_TOKENS,
      summary && { text: summary.payload.text, to: summary.payload.to_message },
    );
    return { keys: events.map((e) => e.eventKey), messages, sent };
  }

  /** One step's model request, as the agent step builds it. */
  async function stepRequest(runId: string, turn: number, step: number) {
    const conversation = await loadStepConversation(ctx.dataSource.manager, runId);
    const messages = await fitConversation(
      { dataSource: ctx.dataSource, config: ctx.config, logger: createLogger('error', 'test') },
      {
        runId,
        turn,
        step,
        modelId: 'openai/test-model',
        provider: summariser,
        model: 'test-model',
        system,
        tools: [],
        messages: conversationFromEvents(conversation.events),
        eventKeys: conversation.events.map((e) => e.eventKey),
        summary: conversation.summary,
        contextTokens: CONTEXT_TOKENS,
        signal: new AbortController().signal,
      },
    );
    return { loaded: conversation.events.length, messages };
  }

  async function appendExchange(runId: string, turn: number, step: number) {
    await ctx.dataSource.transaction(async (tx) => {
      await appendRunEvent(tx, {
        runId,
        eventKey: `assistant-t${turn}-s${step}`,
        kind: 'assistant',
        turn,
        payload: {
          text: `(turn ${turn} step ${step}) ${'z'.repeat(1500)}`,
          model_id: 'openai/test-model',
          total_tokens: 10,
          tool_calls: [{ id: `c${step}`, name: 'run_command', arguments: { command: `echo ${step}` } }],
        },
      });
      await appendRunEvent(tx, {
        runId,
        eventKey: `tool-t${turn}-s${step}-c0`,
        kind: 'tool_call',
        turn,
        payload: {
          tool_call_id: `c${step}`,
          name: 'run_command',
          input: {},
          output: `output of ${step}`,
          is_error: false,
          full_output: 'f'.repeat(50_000),
        },
      });
      // Entries that are not messages lie between them.
      await appendRunEvent(tx, {
        runId,
        eventKey: `files-t${turn}-s${step}`,
        kind: 'files_changed',
        turn,
        payload: { files: [{ repo: '.', path: `f${step}.txt`, diff: '+x' }] },
      });
    });
  }

  async function appendFollowup(runId: string, turn: number, message: string) {
    await appendRunEvent(ctx.dataSource.manager, {
      runId,
      eventKey: `followup-${message}`,
      kind: 'followup',
      turn,
      payload: { followup_id: uniqueName('followup'), seq: 1, message, mode: 'build' },
    });
  }

  test('sends the model what the whole transcript gives, summaries of the previous release included', async () => {
    const runId = await newRun(`Work through it ${uniqueName('flat')}`);
    // Turn 1 as the run's first turn left it, then a follow-up opens turn 2.
    const turn = 2;
    await appendFollowup(runId, turn, 'keep going');
    let step = 0;
    for (; step < 18; step++) await appendExchange(runId, turn, step);

    // A summary as the previous release recorded it: indexes into the whole conversation.
    const before = await wholeConversation(runId);
    const { from, to } = before.sent.summarise!;
    await appendRunEvent(ctx.dataSource.manager, {
      runId,
      eventKey: `context-summary-t${turn}-s${step}-m${from}-${to}`,
      kind: 'context_summary',
      turn,
      payload: {
        text: 'Summary 0',
        from_message: from,
        to_message: to,
        last_event_key: before.keys[to - 1]!,
        model_id: 'openai/test-model',
        total_tokens: 2,
        input_tokens: 1,
        output_tokens: 1,
      },
    });

    let loaded = 0;
    for (; step < 60; step++) {
      if (step === 30) await appendFollowup(runId, turn, 'one more thing');
      const summariesBefore = summaryRequests.length;
      const previous = await latestContextSummary(ctx.dataSource.manager, runId);
      const request = await stepRequest(runId, turn, step);
      loaded = request.loaded;
      const whole = await wholeConversation(runId);
      expect(request.messages).toEqual(whole.sent.messages);
      // The prompt and what follows the summary it had, the messages from `to_message` on.
      expect(loaded).toBe(1 + whole.messages.length - previous!.payload.to_message);

      if (summaryRequests.length > summariesBefore) {
        // A new summary extends the previous one, with indexes into the whole conversation.
        const recorded = (await latestContextSummary(ctx.dataSource.manager, runId))!.payload;
        expect(recorded).toMatchObject({
          from_message: previous!.payload.to_message,
          previous_key: previous!.eventKey,
        });
        expect(recorded.last_event_key).toBe(whole.keys[recorded.to_message - 1]);
        const request = summaryRequests.at(-1)!;
        const expected = summaryRequest(
          whole.messages[0]!.content,
          previous!.payload.text,
          whole.messages.slice(recorded.from_message, recorded.to_message),
          CONTEXT_TOKENS,
        );
        expect(request.system).toBe(SUMMARY_INSTRUCTION);
        expect(request.messages).toEqual(expected.messages);
      }
      await appendExchange(runId, turn, step);
    }
    expect(summaryRequests.length).toBeGreaterThanOrEqual(2);
    // The follow-up that came after the first summary was in turn summarised by a later one.
    expect(summaryRequests.some((r) => r.messages[0]!.content.includes('User: one more thing'))).toBe(true);
    const whole = await wholeConversation(runId);
    expect(whole.messages.length).toBeGreaterThan(120);
    expect(loaded).toBeLessThan(40);
  });

  test('a summary whose last entry is not in the transcript stands for nothing: the whole conversation is read', async () => {
    const runId = await newRun(`Orphan summary ${uniqueName('flat')}`);
    for (let step = 0; step < 3; step++) await appendExchange(runId, 2, step);
    await appendRunEvent(ctx.dataSource.manager, {
      runId,
      eventKey: 'context-summary-t2-s3-m1-3',
      kind: 'context_summary',
      turn: 2,
      payload: {
        text: 'Summary of something else',
        from_message: 1,
        to_message: 3,
        last_event_key: 'assistant-t9-s9',
        model_id: 'openai/test-model',
        total_tokens: 2,
        input_tokens: 1,
        output_tokens: 1,
      },
    });
    const conversation = await loadStepConversation(ctx.dataSource.manager, runId);
    expect(conversation.summary).toBeUndefined();
    expect(conversation.events.map((e) => e.kind)).toEqual([
      'prompt',
      'assistant',
      'assistant',
      'tool_call',
      'assistant',
      'tool_call',
      'assistant',
      'tool_call',
    ]);
  });
});

test('after a summary, the step limit still counts every model call of the turn', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('limit');
  let steps = 0;
  ctx.model.script(marker, (req) => {
    if (req.system === SUMMARY_INSTRUCTION) return { text: 'Summary: the agent listed the workspace.' };
    steps += 1;
    return { text: `(step ${steps}) ${'z'.repeat(3000)}`, toolCalls: [{ name: 'list_directory', arguments: {} }] };
  });
  const runId = await createRun(ctx, key, { prompt: `Keep going ${marker}`, config: { max_steps: 12 } });
  const run = await waitForState(ctx, key, runId, ['FAILED'], undefined, 60_000);
  expect((run.status_message as { message: string }).message).toMatch(/step limit of 12/);
  expect(steps).toBe(12);
  const summaries = (await transcript(ctx, runId)).filter((e) => e.kind === 'context_summary');
  expect(summaries.length).toBeGreaterThan(0);
});
