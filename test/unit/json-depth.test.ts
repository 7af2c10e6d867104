import { MAX_JSON_DEPTH, nestingDepthExceeds } from '../../api/middleware/json-body';

test('counts arrays and objects inside each other, not brackets inside strings', () => {
  expect(nestingDepthExceeds('{"a":[{"b":[]}]}', 4)).toBe(false);
  expect(nestingDepthExceeds('{"a":[{"b":[]}]}', 3)).toBe(true);
  expect(nestingDepthExceeds(`{"a":"${'['.repeat(1000)}"}`, 2)).toBe(false);
  // An escaped quote does not end the string.
  expect(nestingDepthExceeds('{"a":"\\"[[[[[[["}', 2)).toBe(false);
  expect(nestingDepthExceeds('[[], [], []]', 2)).toBe(false);
});

test('20,000 levels are refused without recursion', () => {
  const deep = `{"metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
  expect(nestingDepthExceeds(deep, MAX_JSON_DEPTH)).toBe(true);
});
