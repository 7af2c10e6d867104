import { z } from './zod';

/**
 * The characters JavaScript's `trim()` and `\s` take for white space, spelled out, so that a
 * pattern means the same in the OpenAPI document (where other regex engines read it) as here.
 */
export const WHITE_SPACE = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';

/** Matches a string with at least one character that is not white space. */
export const NOT_BLANK = new RegExp(`[^${WHITE_SPACE}]`);

/**
 * NOT_BLANK for the OpenAPI document, which also states that no string of a request may hold NUL
 * (api/openapi/no-nul.ts): a whole string without NUL and with a character that is not white space.
 */
export const NOT_BLANK_PATTERN = `^[^\\u0000]*[^${WHITE_SPACE}\\u0000][^\\u0000]*$`;

/** A string with a character that is not white space (and, as every string, no NUL). */
export function notBlank(schema: z.ZodString, message = 'must not be blank') {
  return schema.regex(NOT_BLANK, message).openapi({ pattern: NOT_BLANK_PATTERN });
}

/** A name or text that must not be blank: at most `max` characters as sent, stored trimmed. */
export function nonBlankText(max: number, message = 'must not be blank') {
  return notBlank(z.string().max(max), message).trim();
}

/** One character that is neither white space nor NUL, as a regex source (for `<provider>/<model>` and the like). */
export const VISIBLE = `[^${WHITE_SPACE}\\u0000]`;
