import { z } from 'zod';
import type { ApiError } from '../../core/api-error';
import { nearestName, rejectQueryParameters, validate } from '../../api/validate';

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

describe('an unknown field or query parameter suggests the known name it is probably a slip for', () => {
  const body = z.strictObject({
    prompt: z.string().optional(),
    config: z.strictObject({ model_id: z.string().optional(), environment_id: z.string().optional() }).optional(),
    attachments: z.array(z.strictObject({ file_name: z.string().optional() })).optional(),
  });
  const detail = (value: unknown) => {
    try {
      validate(body, value);
    } catch (err) {
      return (err as ApiError).detail;
    }
    throw new Error('validate accepted it');
  };

  test('at the top, in a nested object and in an array of objects', () => {
    expect(detail({ promt: 'hi' })).toBe('Unknown field `promt` (did you mean `prompt`?).');
    expect(detail({ config: { modelId: 'x' } })).toBe(
      'Unknown field `config.modelId` (did you mean `config.model_id`?).',
    );
    expect(detail({ attachments: [{ filename: 'a' }] })).toBe(
      'Unknown field `attachments.0.filename` (did you mean `attachments.0.file_name`?).',
    );
    expect(detail({ promt: 'hi', zebra: 1 })).toBe('Unknown fields `promt` (did you mean `prompt`?), `zebra`.');
  });

  test('nothing is suggested when no known name is close', () => {
    expect(detail({ colour: 'red' })).toBe('Unknown field `colour`.');
    expect(nearestName('x', ['prompt', 'config'])).toBeUndefined();
    expect(nearestName('limt', [])).toBeUndefined();
  });

  test('query parameters', () => {
    expect(() => rejectQueryParameters({ limt: '5' }, ['limit', 'cursor'])).toThrow(
      'Unknown query parameter `limt` (did you mean `limit`?).',
    );
    expect(() => rejectQueryParameters({ page: '2' })).toThrow('Unknown query parameter `page`.');
    expect(() => rejectQueryParameters({ limit: '5' }, ['limit'])).not.toThrow();
  });
});
