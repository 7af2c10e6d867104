import type { z } from 'zod';
import { ForgeError, failureOfStatus } from './forge-errors';

export interface ForgeHttpOptions {
  /** What messages call the forge: `GitHub at https://api.github.com`. */
  title: string;
  apiBase: string;
  token: string | undefined;
  /** The headers that carry the token, as this forge's API documents them. */
  authorization(token: string): Record<string, string>;
  /** Headers every call sends (GitHub's media type and API version). */
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface ForgeCall<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  /** Below the API base, each segment already encoded: `/repos/o/r/pulls`. */
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  /** The answer's shape; anything else fails `unavailable`. */
  schema: S;
}

/** A same-origin redirect (a renamed repository) is followed this many times; another origin never gets the token. */
const MAX_REDIRECTS = 3;

/** JSON calls to one forge's API with its token; every failure is a ForgeError. */
export function forgeHttp(options: ForgeHttpOptions) {
  return async function call<S extends z.ZodType>(request: ForgeCall<S>): Promise<z.output<S>> {
    const { token } = options;
    if (!token) throw new ForgeError('no_credential', `${options.title}: no credential for this forge`);
    const response = await send(options, request, token);
    const text = await response.text();
    if (!response.ok) {
      const detail = errorDetail(text).split(token).join('***');
      const failure = failureOfStatus(response.status, detail, response.headers);
      throw new ForgeError(
        failure,
        `${options.title}: ${request.method} ${request.path} answered ${response.status}${detail ? `: ${detail}` : ''}`,
        response.status,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = request.schema.safeParse(json);
    if (!parsed.success) {
      throw new ForgeError(
        'unavailable',
        `${options.title}: ${request.method} ${request.path} answered ${response.status} with something that is not its API's answer (a proxy's page?)`,
        response.status,
      );
    }
    return parsed.data;
  };
}

/** Sends one request, following same-origin redirects only; a forge that does not answer is `unavailable`. */
async function send(options: ForgeHttpOptions, request: ForgeCall<z.ZodType>, token: string): Promise<Response> {
  const query = request.query ? `?${new URLSearchParams(request.query).toString()}` : '';
  let url = new URL(`${options.apiBase.replace(/\/+$/, '')}${request.path}${query}`);
  const origin = url.origin;
  for (let redirects = 0; ; redirects++) {
    let response: Response;
    try {
      response = await fetch(url, {
        method: request.method,
        headers: {
          accept: 'application/json',
          'user-agent': 'agent-runs-service',
          ...options.headers,
          ...options.authorization(token),
          ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
      });
    } catch (err) {
      const why =
        (err as Error).name === 'TimeoutError' ? 'did not answer in time' : `is unreachable (${causeOf(err)})`;
      throw new ForgeError('unavailable', `${options.title}: ${request.method} ${request.path} ${why}`);
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) return response;
    const next = new URL(location, url);
    if (next.origin !== origin || redirects >= MAX_REDIRECTS) {
      throw new ForgeError(
        'invalid',
        `${options.title}: ${request.method} ${request.path} redirected to ${next.origin}${next.pathname}; the token goes to the configured forge only (check GIT_BASE_URL)`,
        response.status,
      );
    }
    url = next;
  }
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

/** The forge's own words from an error answer (its `message`, `error` and `errors`), at most 300 characters. */
export function errorDetail(text: string): string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return '';
  }
  const words: string[] = [];
  const collect = (value: unknown, depth: number): void => {
    if (typeof value === 'string') words.push(value);
    else if (Array.isArray(value) && depth < 3) value.forEach((v) => collect(v, depth + 1));
    else if (value && typeof value === 'object' && depth < 3) {
      // At the top the API's message fields; below them (GitLab's `{"message": {"base": [...]}}`) every field.
      const o = value as Record<string, unknown>;
      const keys = depth === 0 ? ['message', 'error', 'errors'] : Object.keys(o);
      for (const key of keys) collect(o[key], depth + 1);
    }
  };
  collect(json, 0);
  const detail = words.join('; ');
  return detail.length > 300 ? `${detail.slice(0, 299)}…` : detail;
}
