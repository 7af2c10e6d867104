import type { HarnessProvider } from '../../core/harnesses';

/** What the gateway puts on a forwarded request in place of the run's token. */
export interface ProviderCredential {
  /** `oauth_token`: a Claude subscription's OAuth token, sent as a bearer token. */
  kind: 'api_key' | 'oauth_token';
  value: string;
}

/** The only calls a run may make with the platform's or its team's key: inference, token counts, model lists. */
const ALLOWED: Record<HarnessProvider, { method: string; path: RegExp }[]> = {
  anthropic: [
    { method: 'POST', path: /^\/v1\/messages(\/count_tokens)?$/ },
    { method: 'GET', path: /^\/v1\/models(\/[\w.-]+)?$/ },
  ],
  openai: [
    // Codex CLI speaks the Responses API only; Chat Completions would stream without usage unless asked.
    { method: 'POST', path: /^\/v1\/responses$/ },
    { method: 'GET', path: /^\/v1\/models(\/[\w.-]+)?$/ },
  ],
  gemini: [
    { method: 'POST', path: /^\/v1(beta)?\/models\/[\w.-]+:(generateContent|streamGenerateContent|countTokens)$/ },
    { method: 'GET', path: /^\/v1(beta)?\/models(\/[\w.-]+)?$/ },
  ],
};

export function isAllowedCall(provider: HarnessProvider, method: string, pathname: string): boolean {
  return ALLOWED[provider].some((r) => r.method === method && r.path.test(pathname));
}

/**
 * The upstream URL of a call. The CLIs are given the gateway as their base URL in the shape
 * each expects (Anthropic and Gemini: the host; OpenAI: `/v1`), while an OpenAI base URL
 * configured for the service already ends in its version.
 */
export function upstreamUrl(provider: HarnessProvider, baseUrl: string, pathname: string, search: string): URL {
  const base = baseUrl.replace(/\/+$/, '');
  const rest = provider === 'openai' ? pathname.replace(/^\/v1/, '') : pathname;
  const url = new URL(base + rest);
  const params = new URLSearchParams(search);
  // Gemini's key may come as a query parameter: the run's token never goes upstream.
  params.delete('key');
  url.search = params.toString();
  return url;
}

/** The token the CLI sent, however its provider's protocol carries it. */
export function presentedToken(
  provider: HarnessProvider,
  headers: Record<string, string | string[] | undefined>,
  search: string,
): string | undefined {
  const header = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const bearer = /^Bearer\s+(.+)$/i.exec(header('authorization') ?? '')?.[1];
  if (provider === 'anthropic') return header('x-api-key') ?? bearer;
  if (provider === 'openai') return bearer;
  return header('x-goog-api-key') ?? new URLSearchParams(search).get('key') ?? undefined;
}

/**
 * The request headers a CLI's call may carry upstream: what the protocols need and the SDKs'
 * own descriptions of themselves. Others (an `OpenAI-Organization` or `OpenAI-Project` that
 * bills elsewhere, anything a sandboxed process makes up) stay behind.
 */
const FORWARDED_HEADERS = new Set([
  'content-type',
  'content-length',
  'accept',
  'user-agent',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'openai-beta',
  'originator',
  'session_id',
  'conversation_id',
  'version',
  'x-goog-api-client',
]);
const FORWARDED_PREFIXES = ['x-stainless-', 'x-app'];

/** The request's headers for upstream: the run's token out, the real credential in, no compression. */
export function upstreamHeaders(
  provider: HarnessProvider,
  incoming: Record<string, string | string[] | undefined>,
  credential: ProviderCredential,
  hopByHop: Set<string>,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || hopByHop.has(name)) continue;
    if (FORWARDED_HEADERS.has(name) || FORWARDED_PREFIXES.some((p) => name.startsWith(p))) headers[name] = value;
  }
  // Read in passing for its usage, so uncompressed.
  headers['accept-encoding'] = 'identity';
  if (provider === 'anthropic' && credential.kind === 'oauth_token') {
    headers.authorization = `Bearer ${credential.value}`;
    const beta = [headers['anthropic-beta']].flat().filter(Boolean).join(',');
    headers['anthropic-beta'] = beta ? `${beta},oauth-2025-04-20` : 'oauth-2025-04-20';
  } else if (provider === 'anthropic') headers['x-api-key'] = credential.value;
  else if (provider === 'openai') headers.authorization = `Bearer ${credential.value}`;
  else headers['x-goog-api-key'] = credential.value;
  return headers;
}

/** An error in the provider's own shape, so the CLI reports it as it would the provider's. */
export function providerError(provider: HarnessProvider, status: number, message: string): string {
  if (provider === 'anthropic') {
    const type = status === 401 ? 'authentication_error' : status === 404 ? 'not_found_error' : 'invalid_request_error';
    return JSON.stringify({ type: 'error', error: { type, message } });
  }
  if (provider === 'openai') {
    const type = status === 401 ? 'invalid_api_key' : 'invalid_request_error';
    return JSON.stringify({ error: { message, type, param: null, code: type } });
  }
  const statusName = status === 401 ? 'UNAUTHENTICATED' : status === 404 ? 'NOT_FOUND' : 'INVALID_ARGUMENT';
  return JSON.stringify({ error: { code: status, message, status: statusName } });
}

/** The message of a provider's error body (any of the three shapes), cut short. */
export function errorMessageOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | unknown; message?: unknown };
    const nested =
      parsed.error && typeof parsed.error === 'object' ? (parsed.error as { message?: unknown }).message : undefined;
    const message = nested ?? parsed.message ?? (typeof parsed.error === 'string' ? parsed.error : undefined);
    if (typeof message === 'string' && message) return message.slice(0, 500);
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 500) || 'no details';
}
