import { NUL_STAND_IN, storableJson, storableText } from '../../db/storable';

test('U+0000 becomes ␀ and unpaired surrogates U+FFFD, in text', () => {
  expect(storableText('a\u0000b')).toBe(`a${NUL_STAND_IN}b`);
  expect(storableText('x\ud800y\udc00z')).toBe('x\ufffdy\ufffdz');
  // A pair is a character: kept.
  expect(storableText('😀')).toBe('😀');
});

test('in JSON, values and keys at any depth, and nothing that only looks like an escape', () => {
  const deep = { '\u0000k': [{ v: 'a\u0000\ud83d' }], ok: '😀', text: '\\u0000 is six characters' };
  expect(JSON.parse(storableJson(deep))).toEqual({
    '␀k': [{ v: 'a␀\ufffd' }],
    ok: '😀',
    text: '\\u0000 is six characters',
  });
  // An escaped backslash before a NUL: the backslash stays, the NUL is replaced.
  expect(JSON.parse(storableJson('\\\u0000'))).toBe('\\␀');
});

test('deeply nested values are handled without recursion of our own', () => {
  let nested: unknown = 'a\u0000';
  for (let i = 0; i < 2000; i++) nested = [nested];
  expect(storableJson(nested)).toContain('\\u2400');
});
