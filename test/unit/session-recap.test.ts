import { MAX_RECAP_BYTES, sessionRecap } from '../../activities/harness/session-recap';

test('a recap tells the prompts, follow-ups and answers in order, then the new message; tool outputs stay out', () => {
  const recap = sessionRecap(
    [
      { kind: 'prompt', payload: { text: 'Fix the parser' } },
      { kind: 'assistant', payload: { text: '', tool_calls: [{ name: 'Bash' }] } },
      { kind: 'tool_call', payload: { output: 'secret build log' } },
      { kind: 'assistant', payload: { text: 'Fixed.' } },
      { kind: 'followup', payload: { message: 'Add a test' } },
    ],
    'And a changelog entry',
  );
  expect(recap).toBe(
    [
      '[This conversation continues an earlier session of yours that could not be resumed here. What was said so far:]',
      'User: Fix the parser\n\nYou: Fixed.\n\nUser: Add a test',
      '[The new message:]',
      'And a changelog entry',
    ].join('\n\n'),
  );
});

test('a long conversation keeps its end, within the byte cap, whatever the characters', () => {
  const events = Array.from({ length: 400 }, (_, i) => ({
    kind: 'followup' as const,
    payload: { message: `${i} ${'😀'.repeat(200)}` },
  }));
  const recap = sessionRecap(events, 'next');
  expect(Buffer.byteLength(recap)).toBeLessThan(MAX_RECAP_BYTES + 512);
  expect(recap).toContain('[…]');
  expect(recap).toContain(`User: 399 `);
  expect(recap).not.toContain('User: 0 ');
  expect(recap.endsWith('[The new message:]\n\nnext')).toBe(true);
});
