import type { Middleware } from 'koa';
import { ApiError, invalid } from '../api-error';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a JSON object body into `ctx.state.body` (undefined when there is no body). Too large
 * is 413, another media type 415, anything but a JSON object 400.
 */
export function jsonBody(): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'POST' && ctx.method !== 'PUT' && ctx.method !== 'PATCH') return next();
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > MAX_BODY_BYTES) throw tooLarge();
    const raw = await readBody(ctx.req);
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
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      throw invalid(`The body is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw invalid('The body must be a JSON object.');
    }
    ctx.state.body = parsed;
    return next();
  };
}

function tooLarge(): ApiError {
  return new ApiError('invalid_request', `The body is larger than the limit of ${MAX_BODY_BYTES} bytes.`, {
    status: 413,
  });
}

async function readBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
