import { DurationError, MAX_DURATION_SECONDS, parseDuration } from '../../core/durations';

test.each([
  ['2s', 2],
  ['30m', 1800],
  ['12h', 43_200],
  ['90d', 7_776_000],
  ['0', 0],
  ['0s', 0],
  ['3650d', MAX_DURATION_SECONDS],
])('%s is %d seconds', (text, seconds) => {
  expect(parseDuration(text, '--grace')).toBe(seconds);
});

test.each(['', '10', '1.5h', '-1d', '+1d', '2 s', ' 2s', '2S', '2sec', '2w', '1y', 'd', '1h30m', '0x10s', '１s'])(
  '%j is refused, naming the option and what to write',
  (text) => {
    expect(() => parseDuration(text, '--expires-in')).toThrow(DurationError);
    expect(() => parseDuration(text, '--expires-in')).toThrow(
      `--expires-in must be a whole number and a unit, s, m, h or d (e.g. 90d, 12h, 30m, 2s); got ${JSON.stringify(text)}.`,
    );
  },
);

test('past ten years is refused, however it is written', () => {
  expect(() => parseDuration('3651d', '--grace')).toThrow('--grace may be at most 3650d (ten years); got 3651d.');
  expect(() => parseDuration('9999999999s', '--grace')).toThrow(DurationError);
  expect(() => parseDuration('99999999999s', '--grace')).toThrow(/whole number and a unit/);
});
