import type { Middleware } from 'koa';
import { ApiError, invalid } from '../../core/api-error';

export const MAX_BODY_BYTES = 1024 * 1024;
/** How deep a body's arrays and objects may nest; no request of the contract needs a tenth of it. */
export const MAX_JSON_DEPTH = 64;
/** A body with `attachments` (base64 files, see run-schemas.ts) may be this large in all. */
export const MAX_BODY_WITH_ATTACHMENTS_BYTES = 16 * 1024 * 1024;

/**
 * Whether `path` is the route `pattern`, where a `:name` segment stands for exactly one non-empty
 * segment (`/agent/factories/:uid/runs`), as the router matches it.
 */
export function matchesRoute(pattern: string, path: string): boolean {
  const want = pattern.split('/');
  const got = path.split('/');
  return want.length === got.length && want.every((w, i) => (w.startsWith(':') ? got[i] !== '' : w === got[i]));
}

/**
 * Reads a JSON object body into `ctx.state.body` (undefined when there is no body). Too large
 * is 413, another media type 415, anything but a JSON object 400. On `attachmentPaths` (route
 * patterns, see matchesRoute), a body that carries `attachments` may exceed MAX_BODY_BYTES, up
 * to MAX_BODY_WITH_ATTACHMENTS_BYTES. `maxBytes` sets one limit for every body instead.
 */
export function jsonBody(options: { attachmentPaths?: readonly string[]; maxBytes?: number } = {}): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'POST' && ctx.method !== 'PUT' && ctx.method !== 'PATCH') return next();
    const withAttachments = options.attachmentPaths?.some((pattern) => matchesRoute(pattern, ctx.path)) ?? false;
    const limit = options.maxBytes ?? (withAttachments ? MAX_BODY_WITH_ATTACHMENTS_BYTES : MAX_BODY_BYTES);
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit) throw tooLarge(limit);
    const raw = await readBody(ctx.req, limit);
    if (raw.length === 0) {
      ctx.state.body = undefined;
      return next();
    }
    const type = ctx.get('content-type');
    if (type && !/^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(type)) {
      throw new ApiError(
        'invalid_request',
        `Send the body as JSON with Content-Type: application/json (got ${type}).`,
        {
          status: 415,
        },
      );
    }
    const text = raw.toString('utf8');
    // Before anything walks it: a parser or a validator would recurse once per level.
    if (nestingDepthExceeds(text, MAX_JSON_DEPTH)) {
      throw invalid(`The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw invalid(`The body is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw invalid('The body must be a JSON object.');
    }
    if (
      options.maxBytes === undefined &&
      raw.length > MAX_BODY_BYTES &&
      !Array.isArray((parsed as { attachments?: unknown }).attachments)
    ) {
      throw tooLarge(MAX_BODY_BYTES);
    }
    ctx.state.body = parsed;
    return next();
  };
}

function tooLarge(limit: number): ApiError {
  const detail =
    limit !== MAX_BODY_WITH_ATTACHMENTS_BYTES
      ? `The body is larger than the limit of ${limit} bytes.`
      : `The body is larger than the limit of ${limit} bytes (attachments included).`;
  return new ApiError('invalid_request', detail, { status: 413 });
}

/** The raw bytes of a body, refused (413) past `limit` bytes as they arrive. */
export async function readBody(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** Whether JSON text opens more than `max` arrays and objects inside each other (strings skipped). */
export function nestingDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
