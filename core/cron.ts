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

function valueProblem(text: string, field: CronField): string | undefined {
  const byName = field.names?.indexOf(text.toUpperCase() as never) ?? -1;
  if (byName >= 0) return undefined;
  if (!/^\d+$/.test(text)) return `"${text}" is not a number`;
  const value = Number(text);
  if (value < field.min || value > field.max) return `${text} is out of range`;
  return undefined;
}

function valueOf(text: string, field: CronField): number {
  const byName = field.names?.indexOf(text.toUpperCase() as never) ?? -1;
  return byName >= 0 ? byName + field.min : Number(text);
}

function itemProblem(item: string, field: CronField): string | undefined {
  const [range = '', step, extra] = item.split('/');
  if (extra !== undefined) return `"${item}" has more than one "/"`;
  if (step !== undefined && (!/^\d+$/.test(step) || Number(step) < 1)) {
    return `the step in "${item}" must be a whole number of at least 1`;
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
