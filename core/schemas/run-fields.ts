import { jsonSchema, z } from './zod';
import { SKILL_SPEC_RE, SKILL_SPEC_RULE } from '../skill-spec';

/** Fields that several request schemas share: prompt and title limits, skill specs, metadata. */

export const MAX_PROMPT_CHARS = 100_000;
export const MAX_TITLE_CHARS = 200;

export const skillSpecSchema = z.string().regex(SKILL_SPEC_RE, SKILL_SPEC_RULE);

export const METADATA_KEY_RE = /^[a-zA-Z0-9._-]{1,64}$/;

export const metadataSchema = z
  .record(z.string(), z.string())
  .superRefine((metadata, ctx) => {
    const keys = Object.keys(metadata);
    if (keys.length > 20) ctx.addIssue({ code: 'custom', message: `at most 20 keys (got ${keys.length})` });
    for (const key of keys) {
      if (!METADATA_KEY_RE.test(key)) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'keys must match [a-zA-Z0-9._-]{1,64}' });
      }
      const value = metadata[key]!;
      if (Buffer.byteLength(value, 'utf8') > 256) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'values are at most 256 bytes' });
      }
      if (value.includes('\u0000'))
        ctx.addIssue({ code: 'custom', path: [key], message: 'values may not contain NUL' });
    }
  })
  .openapi(
    'Metadata',
    jsonSchema({
      description: 'Up to 20 keys of [a-zA-Z0-9._-]{1,64}; each value at most 256 bytes of UTF-8.',
      propertyNames: { pattern: METADATA_KEY_RE.source },
      maxProperties: 20,
      additionalProperties: { type: 'string', maxLength: 256 },
    }),
  );
