import { conversationFromEvents, UNFINISHED_TOOL_CALL } from '../../activities/agent-step/conversation-from-events';
import { inMode, PLAN_APPROVED_NOTE, PLAN_MODE_NOTE } from '../../activities/agent-step/plan-mode';
import type { StoredRunEvent } from '../../db/run-event-reads';

type Entry = Pick<StoredRunEvent, 'kind' | 'payload'>;
const entry = (kind: Entry['kind'], payload: Record<string, unknown>): Entry => ({ kind, payload });

test('the prompt is the first user message, with the attached files listed after it', () => {
  const messages = conversationFromEvents([
    entry('prompt', {
      text: 'Summarise the report.',
      attachments: [
        { path: 'attachments/report.pdf', mime_type: 'application/pdf', size_bytes: 2048 },
        { path: 'attachments/data.csv', mime_type: 'text/csv', size_bytes: 10 },
      ],
    }),
  ]);
  expect(messages).toEqual([
    {
      role: 'user',
      content:
        'Summarise the report.\n\nAttached files (in your workspace):\n' +
        '- attachments/report.pdf (application/pdf, 2048 bytes)\n' +
        '- attachments/data.csv (text/csv, 10 bytes)',
    },
  ]);
});

test('a prompt without attachments is its text alone', () => {
  expect(conversationFromEvents([entry('prompt', { text: 'Fix the test.', attachments: [] })])).toEqual([
    { role: 'user', content: 'Fix the test.' },
  ]);
});

test('a run started from a skill alone (no prompt, or a blank one) gets a placeholder first message', () => {
  for (const text of [undefined, '', '  \n ']) {
    expect(conversationFromEvents([entry('prompt', { text })])).toEqual([
      { role: 'user', content: 'Follow the instructions of your skill.' },
    ]);
  }
  // The placeholder still lists attachments.
  const [first] = conversationFromEvents([
    entry('prompt', { text: '', attachments: [{ path: 'attachments/a', mime_type: 'text/plain', size_bytes: 1 }] }),
  ]);
  expect(first?.content).toBe(
    'Follow the instructions of your skill.\n\nAttached files (in your workspace):\n- attachments/a (text/plain, 1 bytes)',
  );
});

test('plan mode puts its note before the prompt and before a follow-up sent in plan mode; the first after a plan says it may be carried out', () => {
  const messages = conversationFromEvents([
    entry('prompt', { text: 'Plan the migration.', mode: 'plan' }),
    entry('assistant', { text: 'The plan: …' }),
    entry('followup', { message: 'Go ahead.', mode: 'normal', after_plan: true }),
    entry('followup', { message: 'And tidy up.', mode: 'normal' }),
    entry('followup', { message: 'Now plan the rollback.', mode: 'plan' }),
  ]);
  expect(messages.map((m) => m.content)).toEqual([
    `${PLAN_MODE_NOTE}\n\nPlan the migration.`,
    'The plan: …',
    `${PLAN_APPROVED_NOTE}\n\nGo ahead.`,
    'And tidy up.',
    `${PLAN_MODE_NOTE}\n\nNow plan the rollback.`,
  ]);
  expect(PLAN_MODE_NOTE).toMatch(/^\[Plan mode: .*do not change files.*\]$/);
  expect(inMode(undefined, 'x')).toBe('x');
  expect(inMode('orchestrate', 'x')).toBe('x');
});

test('assistant turns carry their tool calls, and the results follow as tool messages with is_error', () => {
  const call = { id: 'call_1', name: 'run_command', arguments: { command: 'npm test' } };
  const other = { id: 'call_2', name: 'read_file', arguments: { path: 'a.ts' } };
  const messages = conversationFromEvents([
    entry('prompt', { text: 'Run the tests.' }),
    entry('assistant', { text: '', tool_calls: [call, other], model_id: 'openai/gpt-4o' }),
    entry('tool_call', { tool_call_id: 'call_1', name: 'run_command', output: 'exit 1', is_error: true }),
    entry('tool_call', { tool_call_id: 'call_2', name: 'read_file', output: 'export {}', full_output: 'ignored' }),
    entry('assistant', { text: 'The tests fail.', tool_calls: [] }),
  ]);
  expect(messages).toEqual([
    { role: 'user', content: 'Run the tests.' },
    { role: 'assistant', content: '', toolCalls: [call, other] },
    { role: 'tool', toolCallId: 'call_1', name: 'run_command', content: 'exit 1', isError: true },
    { role: 'tool', toolCallId: 'call_2', name: 'read_file', content: 'export {}', isError: false },
    { role: 'assistant', content: 'The tests fail.' },
  ]);
  // No tool calls: no `toolCalls` key at all (providers reject an empty list).
  expect(messages[4]).not.toHaveProperty('toolCalls');
});

test('only a literal true is an error', () => {
  const [result] = conversationFromEvents([
    entry('tool_call', { tool_call_id: 'c', name: 'n', output: 'o', is_error: 'true' }),
  ]);
  expect(result).toMatchObject({ role: 'tool', isError: false });
});

test('entries that are not conversation (states, summaries, notices, started calls, diffs) are left out', () => {
  const messages = conversationFromEvents([
    entry('state', { state: 'INPROGRESS' }),
    entry('prompt', { text: 'Hi' }),
    entry('tool_call_started', { tool_call_id: 'c', name: 'run_command' }),
    entry('files_changed', { files: [] }),
    entry('notice', { message: 'note' }),
    entry('context_summary', { text: 'summary' }),
    entry('state', { state: 'SUCCEEDED' }),
  ]);
  expect(messages).toEqual([{ role: 'user', content: 'Hi' }]);
});

test('a tool call a stopped turn left without a result is answered as unfinished before the next message, and only then', () => {
  const calls = [
    { id: 'c1', name: 'run_command', arguments: { command: 'make' } },
    { id: 'c2', name: 'run_command', arguments: { command: 'sleep 600' } },
  ];
  const messages = conversationFromEvents([
    entry('prompt', { text: 'Build it.' }),
    entry('assistant', { text: '', tool_calls: calls }),
    entry('tool_call', { tool_call_id: 'c1', name: 'run_command', output: 'built', is_error: false }),
    entry('followup', { message: 'Stop, do X instead.', mode: 'normal' }),
    entry('assistant', { text: '', tool_calls: [{ id: 'c3', name: 'read_file', arguments: { path: 'x' } }] }),
  ]);
  expect(messages.map((m) => [m.role, 'toolCallId' in m ? m.toolCallId : undefined])).toEqual([
    ['user', undefined],
    ['assistant', undefined],
    ['tool', 'c1'],
    ['tool', 'c2'],
    ['user', undefined],
    // The last call is the step's own, still to run: not answered here.
    ['assistant', undefined],
  ]);
  expect(messages[3]).toEqual({
    role: 'tool',
    toolCallId: 'c2',
    name: 'run_command',
    content: UNFINISHED_TOOL_CALL,
    isError: true,
  });
});
