import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

/** An error answer of the API: its problem document's `detail`, with the status and `error_code`. */
export class ApiProblem extends Error {
  override readonly name = 'ApiProblem';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errorCode: string | undefined,
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(detail);
  }

  /** Worth trying again: the service or a dependency of it is briefly unavailable. */
  get transient(): boolean {
    return this.status === 429 || this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** The API could not be reached at all (refused, reset, DNS). */
export class ApiUnreachable extends Error {
  override readonly name = 'ApiUnreachable';
}

export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  /** Tries again on 429/502/503/504 and connection errors; only for requests that are safe to repeat. */
  retries?: number;
  signal?: AbortSignal;
}

const MAX_BACKOFF_MS = 10_000;

/** How long to wait before attempt `attempt` (1 = the first retry), honouring `Retry-After`. */
export function backoffMs(attempt: number, retryAfterSeconds?: number): number {
  if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, 60_000);
  return Math.min(250 * 2 ** (attempt - 1), MAX_BACKOFF_MS);
}

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

function retryAfter(res: Response): number | undefined {
  const value = Number(res.headers.get('retry-after'));
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The problem document of an error response, or what can be said about a body that is none. */
export async function toProblem(res: Response): Promise<ApiProblem> {
  const text = await res.text().catch(() => '');
  let detail = `HTTP ${res.status} ${res.statusText}`.trim();
  let code: string | undefined;
  try {
    const body = JSON.parse(text) as { detail?: unknown; error_code?: unknown; title?: unknown };
    if (typeof body.detail === 'string' && body.detail) detail = body.detail;
    else if (typeof body.title === 'string' && body.title) detail = body.title;
    if (typeof body.error_code === 'string') code = body.error_code;
  } catch {
    // Not a problem document (a proxy's page, say): show its beginning.
    if (text.trim()) detail = `${detail}: ${text.trim().slice(0, 200)}`;
  }
  return new ApiProblem(res.status, detail, code, retryAfter(res));
}

/** A small client of the `/api/v1` endpoints the CLI uses. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly userAgent: string,
  ) {}

  url(path: string, query: Query = {}): URL {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(v));
    }
    return url;
  }

  /** Sends a request and returns the response, whatever its status; connection errors are `ApiUnreachable`. */
  async send(method: string, path: string, options: RequestOptions & { accept?: string } = {}): Promise<Response> {
    const url = this.url(path, options.query);
    try {
      return await fetch(url, {
        method,
        headers: {
          Authorization: `Bearer ${this.apiKey}`,
          Accept: options.accept ?? 'application/json',
          'User-Agent': this.userAgent,
          ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...options.headers,
        },
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new ApiUnreachable(`Cannot reach ${this.baseUrl} (${describeCause(err)}). Is AGENT_RUNS_URL right?`);
    }
  }

  /** A request whose answer is JSON (or text); an error status throws its `ApiProblem`. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.exchange<T>(method, path, options)).body;
  }

  /** As `request`, with the answer's status (where 201 and 200 say different things). */
  async exchange<T>(method: string, path: string, options: RequestOptions = {}): Promise<{ status: number; body: T }> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.send(method, path, options);
        if (!res.ok) throw await toProblem(res);
        if (res.status === 204) return { status: res.status, body: undefined as T };
        const type = res.headers.get('content-type') ?? '';
        return { status: res.status, body: (type.includes('json') ? await res.json() : await res.text()) as T };
      } catch (err) {
        const again = err instanceof ApiUnreachable || (err instanceof ApiProblem && err.transient);
        if (!again || attempt >= (options.retries ?? 0)) throw err;
        await delay(backoffMs(attempt + 1, err instanceof ApiProblem ? err.retryAfterSeconds : undefined));
      }
    }
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>('GET', path, { query, retries: 2 });
  }

  /**
   * A POST that creates something, made safe to repeat with an `Idempotency-Key`: a retry after
   * a lost answer or a 503 gets the first answer instead of a second run or follow-up.
   */
  create<T>(path: string, body: unknown, idempotencyKey: string = randomUUID()): Promise<T> {
    return this.request<T>('POST', path, { body, headers: { 'Idempotency-Key': idempotencyKey }, retries: 4 });
  }
}
