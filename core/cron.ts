/**
 * Checks a five-field cron expression (minute hour day-of-month month day-of-week, in UTC) and
 * says what to fix. Temporal parses the expression itself; this catches mistakes before it
 * does, with a message that names the field.
 */

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day of week', min: 0, max: 6, names: DAYS },
];

export const CRON_FORMAT_HINT =
  'five fields separated by spaces, "minute hour day-of-month month day-of-week" in UTC, e.g. "0 9 * * 1-5" for 09:00 UTC on weekdays';

function allowed(field: CronField): string {
  const names = field.names ? ` or ${field.names[0]}-${field.names[field.names.length - 1]}` : '';
  return `${field.min}-${field.max}${names}`;
}

/** The index of the name `text` spells (in ASCII letters, any case: toUpperCase would make "ſun" SUN), or -1. */
function nameIndex(text: string, field: CronField): number {
  return field.names && /^[A-Za-z]+$/.test(text) ? field.names.indexOf(text.toUpperCase()) : -1;
}

function valueProblem(text: string, field: CronField): string | undefined {
  if (nameIndex(text, field) >= 0) return undefined;
  if (!/^\d+$/.test(text)) return `"${text}" is not a number`;
  const value = Number(text);
  if (value < field.min || value > field.max) return `${text} is out of range`;
  return undefined;
}

function valueOf(text: string, field: CronField): number {
  const byName = nameIndex(text, field);
  return byName >= 0 ? byName + field.min : Number(text);
}

function itemProblem(item: string, field: CronField): string | undefined {
  const [range = '', step, extra] = item.split('/');
  if (extra !== undefined) return `"${item}" has more than one "/"`;
  // Temporal reads a step as a 32-bit number: one larger than the field's span means nothing anyway.
  const span = field.max - field.min + 1;
  if (step !== undefined && (!/^\d+$/.test(step) || Number(step) < 1 || Number(step) > span)) {
    return `the step in "${item}" must be a whole number from 1 to ${span}`;
  }
  if (range === '*') return undefined;
  const [from = '', to, more] = range.split('-');
  if (more !== undefined) return `"${item}" has more than one "-"`;
  if (from === '') return `"${item}" is empty or incomplete`;
  const fromProblem = valueProblem(from, field);
  if (fromProblem) return fromProblem;
  if (to === undefined) {
    return step === undefined ? undefined : `"${item}": a step goes with "*" or a range, e.g. "*/${step}"`;
  }
  const toProblem = valueProblem(to, field);
  if (toProblem) return toProblem;
  if (/^\d+$/.test(from) !== /^\d+$/.test(to))
    return `the range "${range}" mixes a number and a name; use two of a kind`;
  if (valueOf(from, field) > valueOf(to, field)) return `the range "${range}" runs backwards`;
  return undefined;
}

/** Why `expression` is not a cron expression this service takes, or undefined when it is. */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== FIELDS.length) {
    return `expected ${CRON_FORMAT_HINT}; got ${fields.length} field${fields.length === 1 ? '' : 's'} in "${expression}"`;
  }
  for (const [index, text] of fields.entries()) {
    const field = FIELDS[index]!;
    for (const item of text.split(',')) {
      const problem = itemProblem(item, field);
      if (problem) {
        return `the ${field.name} field (field ${index + 1}) "${text}": ${problem}; it takes ${allowed(field)}, "*", ranges such as "1-5", lists such as "1,15" and steps such as "*/10"`;
      }
    }
  }
  return undefined;
}

/** JavaScript's white space (what `trim()` and `\s` take), spelled out so other regex engines read it the same. */
const SPACE = '[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]';

/** A regular expression for the whole numbers from `lo` to `hi` (both below 100), without leading zeros. */
function numberRange(lo: number, hi: number): string {
  const parts: string[] = [];
  const digit = (a: number, b: number) => (a === b ? `${a}` : `[${a}-${b}]`);
  if (lo <= 9) parts.push(digit(lo, Math.min(hi, 9)));
  for (let tens = Math.max(1, Math.floor(lo / 10)); tens <= Math.floor(hi / 10); tens++) {
    const from = Math.max(lo, tens * 10) % 10;
    const to = Math.min(hi, tens * 10 + 9) % 10;
    parts.push(`${tens}${digit(from, to)}`);
  }
  return parts.length === 1 ? parts[0]! : `(?:${parts.join('|')})`;
}

/** A field's name for `value`, in any case (`[Jj][Aa][Nn]`). */
function namePattern(field: CronField, value: number): string {
  return [...field.names![value - field.min]!].map((c) => `[${c}${c.toLowerCase()}]`).join('');
}

/**
 * One field: `*`, values, ranges that do not run backwards (numbers with numbers, names with
 * names), steps after `*` or a range, and lists of those.
 */
function fieldPattern(field: CronField): string {
  const values = Array.from({ length: field.max - field.min + 1 }, (_, i) => field.min + i);
  const step = `(?:/0*${numberRange(1, field.max - field.min + 1)})?`;
  const number = `0*${numberRange(field.min, field.max)}`;
  const ranges = values.map((from) => `0*${from}-0*${numberRange(from, field.max)}`);
  const singles = [number];
  if (field.names) {
    const names = values.map((v) => namePattern(field, v));
    singles.push(...names);
    ranges.push(...values.map((from, i) => `${names[i]}-(?:${names.slice(i).join('|')})`));
  }
  const item = `(?:\\*${step}|(?:${ranges.join('|')})${step}|${singles.join('|')})`;
  return `${item}(?:,${item})*`;
}

/**
 * What cronProblem accepts, as one regular expression: the OpenAPI document states the rule with it, and validation applies it
 * too, so both always say the same.
 */
export const CRON_PATTERN = `^${SPACE}*${FIELDS.map(fieldPattern).join(`${SPACE}+`)}${SPACE}*$`;
