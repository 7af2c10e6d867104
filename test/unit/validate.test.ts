import { z } from 'zod';
import type { ApiError } from '../../core/api-error';
import { validate } from '../../api/validate';

const schema = z.strictObject({ name: z.string(), size: z.number().optional(), tags: z.array(z.string()).optional() });

function detailOf(value: unknown): string {
  try {
    validate(schema, value);
  } catch (err) {
    return (err as ApiError).detail;
  }
  throw new Error('validate accepted it');
}

test('a missing field is "required"; a field of the wrong type says what it should be', () => {
  expect(detailOf({})).toBe('`name` is required.');
  expect(detailOf({ name: 42 })).toBe('`name`: Invalid input: expected string, received number.');
  expect(detailOf({ name: null })).toBe('`name`: Invalid input: expected string, received null.');
  expect(detailOf({ name: 'n', size: 'big', tags: [1] })).toBe(
    '`size`: Invalid input: expected number, received string. `tags.0`: Invalid input: expected string, received number.',
  );
  expect(detailOf({ name: 'n', colour: 'red' })).toBe('Unknown field `colour`.');
});
