/**
 * What PostgreSQL cannot hold, made storable. Its `text` and `jsonb` refuse U+0000 ("unsupported
 * Unicode escape sequence"), and `jsonb` refuses an unpaired surrogate; both come from what the
 * agent reads (a binary file, a tool's output, a model's arguments). U+0000 is stored as U+2400
 * SYMBOL FOR NULL (␀), an unpaired surrogate as U+FFFD, so the rest is stored as it was.
 */
export const NUL_STAND_IN = '\u2400';

const NUL = /\u0000/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A string as a `text` column can hold it. */
export function storableText(value: string): string {
  return value.replace(NUL, NUL_STAND_IN).replace(LONE_SURROGATE, '\ufffd');
}

/**
 * In JSON.stringify's output, U+0000 is the escape \u0000 and an unpaired surrogate an escape
 * \ud800–\udfff (paired ones are written as characters). Matched only after an even number of
 * backslashes: `\\u0000` is the text "\u0000", which is storable as it is.
 */
const UNSTORABLE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(0000|d[89a-f][0-9a-f]{2})/gi;

/** `value` as JSON text that a `jsonb` parameter accepts (keys included), without walking it. */
export function storableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNSTORABLE_ESCAPE, (_match, backslashes: string, code: string) =>
    code === '0000' ? `${backslashes}\\u2400` : `${backslashes}\\ufffd`,
  );
}
