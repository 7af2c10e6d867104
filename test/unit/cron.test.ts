import { CRON_FORMAT_HINT, CRON_PATTERN, cronProblem } from '../../core/cron';

const pattern = new RegExp(CRON_PATTERN);

/** The expression with `value` in field `index` (0-4) and `*` elsewhere. */
const withField = (index: number, value: string) =>
  ['*', '*', '*', '*', '*'].map((f, i) => (i === index ? value : f)).join(' ');

test.each([
  '* * * * *',
  '0 9 * * 1-5',
  '30 6 * * MON-FRI',
  '*/5 * * * *',
  '0 0 1 1 *',
  '59 23 31 12 6',
  '0,15,30,45 9-17/2 1,15 JAN-DEC/3 sun',
  '  0\t9 * *   *  ',
  '07 09 * * *',
])('takes %j', (expression) => {
  expect(cronProblem(expression)).toBeUndefined();
  expect(pattern.test(expression)).toBe(true);
});

test('a wrong number of fields is answered with the format and the count', () => {
  expect(cronProblem('0 9 * *')).toBe(`expected ${CRON_FORMAT_HINT}; got 4 fields in "0 9 * *"`);
  expect(cronProblem('@daily')).toBe(`expected ${CRON_FORMAT_HINT}; got 1 field in "@daily"`);
  expect(cronProblem('')).toBe(`expected ${CRON_FORMAT_HINT}; got 0 fields in ""`);
  // Six fields (seconds first, as Quartz has it) are not this service's format.
  expect(cronProblem('0 0 9 * * *')).toMatch(/got 6 fields/);
});

describe.each([
  { index: 0, name: 'minute', min: 0, max: 59, takes: '0-59' },
  { index: 1, name: 'hour', min: 0, max: 23, takes: '0-23' },
  { index: 2, name: 'day of month', min: 1, max: 31, takes: '1-31' },
  { index: 3, name: 'month', min: 1, max: 12, takes: '1-12 or JAN-DEC' },
  { index: 4, name: 'day of week', min: 0, max: 6, takes: '0-6 or SUN-SAT' },
])('the $name field', ({ index, name, min, max, takes }) => {
  test(`takes ${min} to ${max}`, () => {
    expect(cronProblem(withField(index, String(min)))).toBeUndefined();
    expect(cronProblem(withField(index, String(max)))).toBeUndefined();
    expect(cronProblem(withField(index, `${min}-${max}`))).toBeUndefined();
  });

  test('names the field, its position and what it takes when a value is out of range', () => {
    for (const value of [min - 1, max + 1].filter((v) => v >= 0)) {
      expect(cronProblem(withField(index, String(value)))).toBe(
        `the ${name} field (field ${index + 1}) "${value}": ${value} is out of range; it takes ${takes}, "*", ranges such as "1-5", lists such as "1,15" and steps such as "*/10"`,
      );
    }
  });

  test('takes steps from 1 to the span of the field, and no other', () => {
    const span = max - min + 1;
    expect(cronProblem(withField(index, `*/${span}`))).toBeUndefined();
    for (const step of ['0', String(span + 1), 'x', '']) {
      expect(cronProblem(withField(index, `*/${step}`))).toContain(
        `the step in "*/${step}" must be a whole number from 1 to ${span}`,
      );
    }
  });
});

test('month and day-of-week names, in any case, and only in those fields', () => {
  expect(cronProblem('0 9 * jan-Mar mon,wed,FRI')).toBeUndefined();
  expect(cronProblem('0 9 * * SAT-SUN')).toMatch(
    /the day of week field \(field 5\) "SAT-SUN": the range "SAT-SUN" runs backwards/,
  );
  expect(cronProblem('MON 9 * * *')).toMatch(
    /^the minute field \(field 1\) "MON": "MON" is not a number; it takes 0-59,/,
  );
  expect(cronProblem('0 9 * MONDAY *')).toMatch(/"MONDAY" is not a number; it takes 1-12 or JAN-DEC/);
});

test.each([
  ['0 17-9 * * *', 'the hour field (field 2) "17-9": the range "17-9" runs backwards'],
  ['0 9 * * 1-FRI', 'the range "1-FRI" mixes a number and a name; use two of a kind'],
  ['0 9 1-5-7 * *', '"1-5-7" has more than one "-"'],
  ['*/5/2 * * * *', '"*/5/2" has more than one "/"'],
  ['5/10 * * * *', '"5/10": a step goes with "*" or a range, e.g. "*/10"'],
  ['1,,2 * * * *', '"" is empty or incomplete'],
  ['-5 * * * *', '"-5" is empty or incomplete'],
  ['0 9 * * 7', '7 is out of range; it takes 0-6 or SUN-SAT'],
  ['0 9 L * *', '"L" is not a number'],
  ['0 9 ? * *', '"?" is not a number'],
  ['1.5 * * * *', '"1.5" is not a number'],
])('refuses %j: %s', (expression, problem) => {
  expect(cronProblem(expression)).toContain(problem);
  expect(pattern.test(expression)).toBe(false);
});

test('the first problem is the one reported, field by field and item by item', () => {
  expect(cronProblem('60 24 * * *')).toMatch(/^the minute field/);
  expect(cronProblem('0 1,2,99,100 * * *')).toMatch(/"1,2,99,100": 99 is out of range/);
});

test('CRON_PATTERN takes exactly what cronProblem takes', () => {
  const atoms = [
    ...['*', '0', '1', '5', '6', '7', '07', '12', '13', '23', '24', '31', '32', '59', '60', ''],
    ...['MON', 'fri', 'Sun', 'sat', 'JAN', 'dec', 'x', '-', '*/0', '*/7', '*/8', '*/60', '*/61'],
    ...['1-5', '5-1', 'MON-FRI', 'FRI-MON', '1-FRI', '3/2', '1-5/2', '1-2-3', '*/1/2', '+1', '٣'],
  ];
  // mulberry32: the same expressions on every run.
  let seed = 42;
  const pick = <T>(items: readonly T[]): T => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return items[((t ^ (t >>> 14)) >>> 0) % items.length]!;
  };
  const disagreements = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const fields = Array.from({ length: 5 }, () => {
      const items = Array.from({ length: pick([1, 2]) }, () => pick(atoms));
      return items.join(pick([',', ',', '-', '/']));
    });
    const expression = fields.join(' ');
    if ((cronProblem(expression) === undefined) !== pattern.test(expression)) disagreements.add(expression);
  }
  expect([...disagreements]).toEqual([]);
});

// toUpperCase makes "ſ" (long s) "S" and "ı" (dotless i) "I": names are matched in ASCII only, as the pattern does.
test('names are ASCII letters: "ſun", "frı" and "ſep" are refused by both, with what to fix', () => {
  for (const [index, name] of [
    [4, 'ſun'],
    [4, 'frı'],
    [3, 'ſep'],
  ] as const) {
    const expression = withField(index, name);
    expect([expression, pattern.test(expression)]).toEqual([expression, false]);
    expect(cronProblem(expression)).toContain(`"${name}": "${name}" is not a number`);
  }
});

test('white space is JavaScript white space in both', () => {
  for (const space of ['\t', '\n', '\u00a0', '\u2003', '\u3000', '\ufeff']) {
    const expression = `${space}0${space}9 * * *${space}`;
    expect([space, cronProblem(expression), pattern.test(expression)]).toEqual([space, undefined, true]);
  }
  // U+0085 (NEXT LINE) is not white space to JavaScript: it is part of a field.
  expect(cronProblem('0\u00859 * * *')).toMatch(/got 4 fields/);
  expect(pattern.test('0\u00859 * * *')).toBe(false);
});
