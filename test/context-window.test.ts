import { fitToContext, requestTokens } from '../activities/model/context-window';
import type { AgentMessage } from '../activities/model/types';

const exchange = (i: number, output: string): AgentMessage[] => [
  { role: 'assistant', content: `step ${i}`, toolCalls: [{ id: `c${i}`, name: 'run_command', arguments: {} }] },
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
  expect(fitted.trimmedOutputs).toBeGreaterThan(0);
  const outputs = fitted.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  expect(outputs.slice(-4).every((o) => o.length > 2000)).toBe(true);
  expect(outputs[0]).toMatch(
    /^\[output shortened to fit the context window; \d+ characters in the transcript\. It began: line one of 1\]$/,
  );
  expect(requestTokens('system', fitted.messages, [])).toBeLessThanOrEqual(6000 * 0.75);
});

test('when shrinking is not enough, whole exchanges go, every tool call keeps its result, and the first message says so', () => {
  const messages: AgentMessage[] = [{ role: 'user', content: 'task' }];
  for (let i = 1; i <= 30; i++) messages.push(...exchange(i, 'y'.repeat(10_000)));
  const fitted = fitToContext('system', messages, [], 12_000);
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
