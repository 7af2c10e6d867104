import { timingSafeEqual } from 'node:crypto';
import { HOP_BY_HOP_HEADERS } from '../sandbox/hop-by-hop';
import { chmod, rm } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { HarnessProvider } from '../../core/harnesses';
import { UsageReader, type ResponseUsage } from './gateway-usage';
import {
  errorMessageOf,
  isAllowedCall,
  presentedToken,
  providerError,
  upstreamHeaders,
  upstreamUrl,
  type ProviderCredential,
} from './gateway-routes';

/** Whether the run may make another model call now; the refusal's message says why not. */
export type GatewayAdmission =
  { admitted: true } | { admitted: false; reason: 'budget_exceeded' | 'not_in_progress'; message: string };

export interface GatewayChannelOptions {
  /** Where this channel listens; the sandbox binds it in as the gateway's socket. */
  socketPath: string;
  /** The run's token: the only key the CLI has, good for this channel only. */
  token: string;
  provider: HarnessProvider;
  /** The provider's base URL as configured for the service. */
  baseUrl: string;
  credential: ProviderCredential;
  /** Asked before every call is forwarded. */
  admit(): Promise<GatewayAdmission>;
  /** Told what each answered call used, once its response has ended. */
  onUsage(usage: ResponseUsage): Promise<void>;
  /** How long an upstream call may go without a byte either way. */
  idleTimeoutMs: number;
  /**
   * Told when the provider refuses the credential (401, 403): no retry of the CLI's can succeed,
   * and some retry for minutes (Claude Code: ten times, with backoff).
   */
  onCredentialRefused?(status: number): void;
  /**
   * Decides a tool call the CLI's hook asks about (`POST /agent-runs/tool-call`, with the run's
   * token); absent: the route is 404, as any other call that is not the provider's.
   */
  onToolCall?(call: GatedToolCall): Promise<ToolCallDecision>;
}

/** A tool call as a CLI's hook reports it, before the CLI runs it. */
export interface GatedToolCall {
  tool: string;
  input: Record<string, unknown>;
}

/** Whether the call may run; a denial's reason is what the CLI tells its model. */
export type ToolCallDecision = { decision: 'allow' } | { decision: 'deny'; reason: string };

/** The gateway's own route, answered here and never forwarded: a CLI hook's question about a tool call. */
export const TOOL_CALL_ROUTE = '/agent-runs/tool-call';
const TOOL_CALL_MAX_BYTES = 1024 * 1024;

export interface GatewayChannel {
  readonly socketPath: string;
  /** The channel on the host's loopback too, for processes that run without a sandbox. */
  tcpUrl(): Promise<string>;
  /** The gateway's last refusal of the run's calls (its budget, its state). */
  readonly refusal: (GatewayAdmission & { admitted: false }) | undefined;
  /** The provider's last error answer. */
  readonly providerError: { status: number; message: string } | undefined;
  /** Calls forwarded so far. */
  readonly forwarded: number;
  close(): Promise<void>;
}

/** How long an answer's end, or the next admission, waits for a charge being recorded (a stuck database does not hold the CLI for good). */
const CHARGE_WAIT_MS = 10_000;

/** Calls one run may have upstream at once: its budget is checked before each, so this bounds the overshoot. */
const MAX_CONCURRENT_CALLS = 4;

// The length too: a body is piped on, re-framed by Node.
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS, 'content-length']);

const sameToken = (a: string | undefined, b: string) =>
  a !== undefined && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * The model gateway: how a harness's CLI reaches its provider without holding a key. Each CLI
 * process gets a channel (a Unix socket bound into its sandbox) and a token; the gateway checks
 * the token, asks whether the run may still spend, swaps in the real credential, forwards the
 * call to the configured provider and streams the answer back unchanged while reading its usage.
 */
export function openGatewayChannel(options: GatewayChannelOptions): Promise<GatewayChannel> {
  const { provider } = options;
  let refusal: GatewayChannel['refusal'];
  let lastError: GatewayChannel['providerError'];
  let forwarded = 0;
  let inFlight = 0;
  const upstreams = new Set<http.ClientRequest>();
  // Charges of answered calls not yet recorded: the next admission waits for them, or a CLI
  // quick to ask again would be admitted on a total that misses its last answer.
  const charging = new Set<Promise<void>>();

  const answer = (res: ServerResponse, status: number, message: string) => {
    if (res.headersSent) return res.destroy();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(providerError(provider, status, message));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (!sameToken(presentedToken(provider, req.headers, url.search), options.token)) {
      req.resume();
      return answer(res, 401, 'agent-runs model gateway: this key is not valid for this run.');
    }
    if (options.onToolCall && req.method === 'POST' && url.pathname === TOOL_CALL_ROUTE) {
      return answerToolCall(req, res, options.onToolCall);
    }
    if (!isAllowedCall(provider, req.method ?? '', url.pathname)) {
      req.resume();
      return answer(res, 404, `agent-runs model gateway: ${req.method} ${url.pathname} is not a call a run may make.`);
    }
    if (inFlight >= MAX_CONCURRENT_CALLS) {
      req.resume();
      res.setHeader('retry-after', '1');
      return answer(res, 429, `agent-runs model gateway: at most ${MAX_CONCURRENT_CALLS} calls of a run at once.`);
    }
    inFlight += 1;
    try {
      await within(Promise.all(charging), CHARGE_WAIT_MS);
      const admission = await options.admit();
      if (!admission.admitted) {
        refusal = admission;
        req.resume();
        return answer(res, 400, `agent-runs: ${admission.message}`);
      }
      await forward(req, res, url);
    } finally {
      inFlight -= 1;
    }
  };

  const forward = (req: IncomingMessage, res: ServerResponse, url: URL) =>
    new Promise<void>((resolve) => {
      const target = upstreamUrl(provider, options.baseUrl, url.pathname, url.search);
      const client = target.protocol === 'https:' ? https : http;
      const upstream = client.request(target, {
        method: req.method,
        headers: upstreamHeaders(provider, req.headers, options.credential, HOP_BY_HOP),
        timeout: options.idleTimeoutMs,
      });
      upstreams.add(upstream);
      forwarded += 1;
      const done = () => {
        upstreams.delete(upstream);
        resolve();
      };
      upstream.on('timeout', () => upstream.destroy(new Error('the provider sent nothing for too long')));
      upstream.on('error', (err) => {
        answer(res, 502, `agent-runs model gateway: the provider could not be reached (${err.message}).`);
        done();
      });
      upstream.on('response', (answerFromProvider) => {
        const status = answerFromProvider.statusCode ?? 502;
        const back: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answerFromProvider.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
        }
        res.writeHead(status, back);
        const usage = new UsageReader(provider, String(answerFromProvider.headers['content-type'] ?? ''));
        let errorBody = '';
        answerFromProvider.on('data', (chunk: Buffer) => {
          if (status >= 400) errorBody = (errorBody + chunk.toString('utf8')).slice(0, 16_384);
          else usage.write(chunk);
        });
        // The answer's end waits for its charge, so that the CLI's next call is admitted on it.
        answerFromProvider.pipe(res, { end: false });
        // Charged once, whether the answer ended or the CLI went away in the middle of it.
        let settled = false;
        const settle = () => {
          if (settled) return;
          settled = true;
          if (status >= 400) lastError = { status, message: errorMessageOf(errorBody) };
          if (status === 401 || status === 403) options.onCredentialRefused?.(status);
          const used =
            status < 400 && isInference(req.method, url.pathname) ? usageOrEstimate(usage, requestBytes) : undefined;
          const charge = (used ? options.onUsage(used) : Promise.resolve()).catch(() => undefined);
          charging.add(charge);
          void within(charge, CHARGE_WAIT_MS).finally(() => {
            charging.delete(charge);
            if (answerFromProvider.complete) res.end();
            else res.destroy();
            done();
          });
        };
        answerFromProvider.on('end', settle);
        answerFromProvider.on('error', settle);
        res.on('close', () => {
          if (!answerFromProvider.complete) upstream.destroy();
          settle();
        });
      });
      let requestBytes = 0;
      req.on('data', (chunk: Buffer) => {
        requestBytes += chunk.length;
      });
      req.pipe(upstream);
    });

  const servers: http.Server[] = [];
  const serve = () => {
    const server = http.createServer((req, res) => {
      handle(req, res).catch((err: unknown) =>
        answer(res, 502, `agent-runs model gateway failed: ${err instanceof Error ? err.message : String(err)}`),
      );
    });
    servers.push(server);
    return server;
  };
  let tcp: Promise<string> | undefined;

  return (async () => {
    await rm(options.socketPath, { force: true });
    const server = serve();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.socketPath, resolve);
    });
    // The sandbox's uid connects to it.
    await chmod(options.socketPath, 0o666);
    return {
      socketPath: options.socketPath,
      tcpUrl() {
        tcp ??= new Promise((resolve, reject) => {
          const loopback = serve();
          loopback.once('error', reject);
          loopback.listen(0, '127.0.0.1', () =>
            resolve(`http://127.0.0.1:${(loopback.address() as AddressInfo).port}`),
          );
        });
        return tcp;
      },
      get refusal() {
        return refusal;
      },
      get providerError() {
        return lastError;
      },
      get forwarded() {
        return forwarded;
      },
      async close() {
        for (const u of upstreams) u.destroy();
        for (const s of servers) s.closeAllConnections();
        await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
        await rm(options.socketPath, { force: true });
      },
    };
  })();
}

/** Reads a hook's `{tool, input}` and answers the decision as JSON; a malformed question is denied. */
async function answerToolCall(
  req: IncomingMessage,
  res: ServerResponse,
  decide: (call: GatedToolCall) => Promise<ToolCallDecision>,
): Promise<void> {
  let body = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    body += chunk.toString('utf8');
    if (body.length > TOOL_CALL_MAX_BYTES) break;
  }
  let call: GatedToolCall | undefined;
  try {
    const parsed = JSON.parse(body) as { tool?: unknown; input?: unknown };
    if (typeof parsed.tool === 'string' && parsed.input && typeof parsed.input === 'object') {
      call = { tool: parsed.tool, input: parsed.input as Record<string, unknown> };
    }
  } catch {
    // not JSON: denied below
  }
  // Fails closed: a call the service could not read or decide on does not run.
  const decision: ToolCallDecision = call
    ? await decide(call).catch(() => ({
        decision: 'deny' as const,
        reason: 'agent-runs: the service could not decide on this call just now, so it did not run; try it again.',
      }))
    : { decision: 'deny', reason: 'agent-runs: the tool call could not be read, so it does not run.' };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(decision));
}

/** A call the provider bills tokens for (not a model listing or a token count). */
function isInference(method: string | undefined, pathname: string): boolean {
  return method === 'POST' && !/count_?tokens/i.test(pathname);
}

/**
 * What an answered call used: what the provider reported, or, when it reported nothing (a
 * response cut before its usage, a body too large to read), an estimate of four bytes a token
 * over what went each way, so that no call escapes the run's budget.
 */
function usageOrEstimate(usage: UsageReader, requestBytes: number): ResponseUsage {
  const reported = usage.end();
  if (reported && reported.totalTokens > 0) {
    if (reported.outputTokens !== undefined) return reported;
    // Cut before the answer said how long it was: its bytes stand for it.
    const outputTokens = Math.ceil(usage.bytes / 4);
    return { ...reported, outputTokens, totalTokens: reported.totalTokens + outputTokens };
  }
  const inputTokens = Math.ceil(requestBytes / 4);
  const outputTokens = Math.ceil(usage.bytes / 4);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

/** Waits for `promise`, but at most `ms`. */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
