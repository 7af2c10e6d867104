import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  normaliseGemini,
  normaliseResponses,
  writeAnthropicStream,
  writeGeminiStream,
  writeResponsesStream,
} from './scripted-streams';

export interface ChatRequest {
  model: string;
  /** OpenAI messages as sent; Anthropic messages flattened to text per message. */
  messages: { role: string; content: string; tool_calls?: unknown[]; tool_call_id?: string }[];
  /** The system prompt (OpenAI: the system message, Anthropic: `system`). */
  system?: string;
  /** Names of the tools offered. */
  tools: string[];
  protocol: 'openai' | 'anthropic' | 'openai-responses' | 'gemini';
  /** The key the request carried (`x-api-key`, a bearer token, `x-goog-api-key` or `?key=`). */
  apiKey?: string;
  /** The request asked for a streamed reply. */
  stream?: boolean;
  /** Anthropic: whether the request marks a prompt-cache breakpoint. */
  cacheControl?: boolean;
  /** The longest reply asked for, if any (`max_completion_tokens`, `max_tokens`). */
  maxTokens?: number;
}

export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export type ScriptedReply =
  | { text: string; totalTokens?: number; toolCalls?: ScriptedToolCall[] }
  | { status: number; error: string }
  /** Holds the response until `release()` is called or the client goes away. */
  | { hold: Promise<{ text: string; totalTokens?: number; toolCalls?: ScriptedToolCall[] }> };

export type Script = (request: ChatRequest, call: number) => ScriptedReply | Promise<ScriptedReply>;

/**
 * A real HTTP server speaking the OpenAI Chat Completions protocol (`/v1/chat/completions`), the
 * Anthropic Messages protocol (`/v1/messages`, plain or streamed), the OpenAI Responses protocol
 * (`/v1/responses`, streamed) and Gemini's `generateContent` / `streamGenerateContent`, scripted
 * per test. A script is chosen by a marker that the test puts in the run's prompt, so runs never
 * share a script.
 */
export class ScriptedModelServer {
  private readonly server = http.createServer((req, res) => void this.handle(req, res));
  private readonly scripts = new Map<string, { script: Script; calls: ChatRequest[] }>();
  private readonly waiters: { marker: string; count: number; resolve: () => void }[] = [];
  /** Requests whose client disconnected before the reply (a cancelled or killed call). */
  readonly aborted: string[] = [];

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  script(marker: string, script: Script): void {
    this.scripts.set(marker, { script, calls: [] });
  }

  calls(marker: string): ChatRequest[] {
    return this.scripts.get(marker)?.calls ?? [];
  }

  /** Resolves once the script for `marker` has received `count` calls. */
  waitForCalls(marker: string, count: number): Promise<void> {
    if (this.calls(marker).length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ marker, count, resolve }));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://scripted');
    if (req.method === 'POST' && url.pathname.endsWith('/messages/count_tokens')) {
      return this.send(res, 200, { input_tokens: 10 });
    }
    const gemini = /\/models\/([^/:]+):(streamGenerateContent|generateContent)$/.exec(url.pathname);
    const protocol = url.pathname.endsWith('/chat/completions')
      ? 'openai'
      : url.pathname.endsWith('/messages')
        ? 'anthropic'
        : url.pathname.endsWith('/responses')
          ? 'openai-responses'
          : gemini
            ? 'gemini'
            : undefined;
    if (req.method !== 'POST' || !protocol) {
      return this.send(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
    }
    const raw = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    const body =
      protocol === 'openai-responses'
        ? normaliseResponses(raw)
        : protocol === 'gemini'
          ? normaliseGemini(raw, gemini![1]!)
          : normalise(raw, protocol);
    body.apiKey = requestKey(req, url);
    body.stream = protocol === 'gemini' ? gemini![2] === 'streamGenerateContent' : raw.stream === true;
    const text = [body.system ?? '', ...body.messages.map((m) => m.content)].join('\n');
    const marker = [...this.scripts.keys()].find((m) => text.includes(m));
    const entry = marker === undefined ? undefined : this.scripts.get(marker);
    if (!entry || marker === undefined) {
      const last = body.messages[body.messages.length - 1]?.content ?? '';
      return this.reply(res, body, { text: `echo: ${last}`, totalTokens: 7 });
    }
    entry.calls.push(body);
    for (const w of [...this.waiters]) {
      if (w.marker === marker && entry.calls.length >= w.count) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    let reply = await entry.script(body, entry.calls.length);
    if ('hold' in reply) {
      let gone = false;
      res.once('close', () => {
        if (!res.writableEnded) {
          gone = true;
          this.aborted.push(marker);
        }
      });
      reply = await reply.hold;
      if (gone) return;
    }
    if ('status' in reply) return this.send(res, reply.status, errorBody(protocol, reply.status, reply.error));
    this.reply(res, body, reply);
  }

  private callId = 0;

  private reply(
    res: http.ServerResponse,
    req: ChatRequest,
    reply: { text: string; totalTokens?: number; toolCalls?: ScriptedToolCall[] },
  ): void {
    const total = reply.totalTokens ?? 10;
    const input = Math.floor(total / 2);
    const calls = (reply.toolCalls ?? []).map((c) => ({
      ...c,
      id: `call_${++this.callId}_${Math.random().toString(36).slice(2, 8)}`,
    }));
    const streamed = { ...reply, toolCalls: calls };
    if (req.protocol === 'openai-responses') return writeResponsesStream(res, req, streamed);
    if (req.protocol === 'gemini') return writeGeminiStream(res, req, streamed, req.stream === true);
    if (req.protocol === 'anthropic' && req.stream) return writeAnthropicStream(res, req, streamed);
    if (req.protocol === 'anthropic') {
      return this.send(res, 200, {
        id: `msg_${Math.random().toString(36).slice(2)}`,
        type: 'message',
        role: 'assistant',
        model: req.model,
        content: [
          ...(reply.text ? [{ type: 'text', text: reply.text }] : []),
          ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
        ],
        stop_reason: calls.length ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: input, output_tokens: total - input },
      });
    }
    this.send(res, 200, {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.text || null,
            ...(calls.length
              ? {
                  tool_calls: calls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                  })),
                }
              : {}),
          },
          finish_reason: calls.length ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: input, completion_tokens: total - input, total_tokens: total },
    });
  }

  private send(res: http.ServerResponse, status: number, body: unknown): void {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}

/** The provider's own error shape. */
function errorBody(protocol: ChatRequest['protocol'], status: number, message: string): unknown {
  if (protocol === 'anthropic') {
    const type =
      status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'invalid_request_error';
    return { type: 'error', error: { type, message } };
  }
  if (protocol === 'gemini')
    return { error: { code: status, message, status: status === 401 ? 'UNAUTHENTICATED' : 'INVALID_ARGUMENT' } };
  return { error: { message, type: status === 401 ? 'invalid_api_key' : 'invalid_request_error', code: null } };
}

function requestKey(req: http.IncomingMessage, url: URL): string | undefined {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const bearer = /^Bearer (.+)$/i.exec(header('authorization') ?? '')?.[1];
  return header('x-api-key') ?? bearer ?? header('x-goog-api-key') ?? url.searchParams.get('key') ?? undefined;
}

/** A promise with its resolver, for holding a scripted reply until the test lets it go. */
export function gate<T>(): { promise: Promise<T>; release: (value: T) => void } {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: string; text?: string; content?: unknown; name?: string; input?: unknown }) =>
      b.type === 'text'
        ? (b.text ?? '')
        : b.type === 'tool_result'
          ? blockText(b.content)
          : b.type === 'tool_use'
            ? `[tool_use ${b.name} ${JSON.stringify(b.input)}]`
            : '',
    )
    .join('\n');
}

/** One shape for both protocols, so tests can assert what the model was shown. */
function normalise(raw: Record<string, unknown>, protocol: 'openai' | 'anthropic'): ChatRequest {
  const maxTokens = (raw.max_completion_tokens ?? raw.max_tokens) as number | undefined;
  const tools = ((raw.tools as { name?: string; function?: { name: string } }[] | undefined) ?? []).map(
    (t) => t.function?.name ?? t.name ?? '',
  );
  if (protocol === 'openai') {
    const all = raw.messages as { role: string; content: string | null }[];
    const system = all.find((m) => m.role === 'system')?.content ?? undefined;
    const messages = all.filter((m) => m.role !== 'system').map((m) => ({ ...m, content: m.content ?? '' }));
    return { model: raw.model as string, messages, system, tools, protocol, maxTokens };
  }
  const messages = (raw.messages as { role: string; content: unknown }[]).map((m) => ({
    role: m.role,
    content: blockText(m.content),
  }));
  const cacheControl = JSON.stringify([raw.system, raw.tools]).includes('"cache_control"');
  return {
    model: raw.model as string,
    messages,
    system: blockText(raw.system) || undefined,
    tools,
    protocol,
    cacheControl,
    maxTokens,
  };
}
