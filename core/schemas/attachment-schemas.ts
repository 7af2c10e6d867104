import { jsonSchema, z } from './zod';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_ATTACHMENTS_TOTAL_BYTES } from '../attachments';

/** Standard, padded base64; a loop, since a regular expression over megabytes overflows the stack. */
export function isBase64(data: string): boolean {
  if (data.length % 4 !== 0) return false;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  for (let i = 0; i < data.length - padding; i++) {
    const c = data.charCodeAt(i);
    const ok =
      (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 /* + */ || c === 47; /* / */
    if (!ok) return false;
  }
  return true;
}

/** Bytes that `data` (standard base64, padded) decodes to. */
export function base64DecodedBytes(data: string): number {
  return (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** What isBase64 accepts, for the document (a regular expression over megabytes would overflow the stack here). */
const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';
/** The longest base64 text of MAX_ATTACHMENT_BYTES. */
const MAX_ATTACHMENT_BASE64_CHARS = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4;
const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

const attachmentSchema = z.strictObject({
  data: z
    .string()
    .superRefine((data, ctx) => {
      // The size first: a megabytes-long string is refused before it is looked at character by character.
      if (data.length > MAX_ATTACHMENT_BASE64_CHARS + 4) {
        ctx.addIssue({
          code: 'custom',
          message: `the file is larger than the limit of ${MAX_ATTACHMENT_BYTES} bytes per attachment`,
        });
      } else if (!isBase64(data)) {
        ctx.addIssue({ code: 'custom', message: 'must be standard base64 (A-Z a-z 0-9 + /, padded with =)' });
      } else if (base64DecodedBytes(data) > MAX_ATTACHMENT_BYTES) {
        ctx.addIssue({
          code: 'custom',
          message: `the file is larger than the limit of ${MAX_ATTACHMENT_BYTES} bytes per attachment`,
        });
      }
    })
    .openapi(
      jsonSchema({
        description: `The file, standard base64 (padded); at most ${MAX_ATTACHMENT_BYTES} bytes decoded.`,
        pattern: BASE64_PATTERN,
        maxLength: MAX_ATTACHMENT_BASE64_CHARS,
        contentEncoding: 'base64',
      }),
    ),
  file_name: z.string().min(1).max(1024),
  mime_type: z.string().max(255).regex(MIME_TYPE, 'must be a MIME type such as text/plain'),
});

export const attachmentsSchema = z
  .array(attachmentSchema)
  .max(MAX_ATTACHMENTS, `at most ${MAX_ATTACHMENTS} attachments`)
  .superRefine((attachments, ctx) => {
    const total = attachments.reduce((sum, a) => sum + base64DecodedBytes(a.data), 0);
    if (total > MAX_ATTACHMENTS_TOTAL_BYTES) {
      ctx.addIssue({
        code: 'custom',
        message: `the attachments add up to ${total} bytes, above the limit of ${MAX_ATTACHMENTS_TOTAL_BYTES} bytes in all`,
      });
    }
  });
