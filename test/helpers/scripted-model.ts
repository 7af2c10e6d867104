import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
}

export type ScriptedReply =
  | { text: string; totalTokens?: number }
  | { status: number; error: string }
  /** Holds the response until `release()` is called or the client goes away. */
  | { hold: Promise<{ text: string; totalTokens?: number }> };

export type Script = (request: ChatRequest, call: number) => ScriptedReply | Promise<ScriptedReply>;

/**
 * A real HTTP server speaking the OpenAI Chat Completions protocol, scripted per test. A script
 * is chosen by a marker that the test puts in the run's prompt, so runs never share a script.
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
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      return this.send(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest;
    const text = body.messages.map((m) => m.content).join('\n');
    const marker = [...this.scripts.keys()].find((m) => text.includes(m));
    const entry = marker === undefined ? undefined : this.scripts.get(marker);
    if (!entry || marker === undefined) {
      return this.reply(res, body, {
        text: `echo: ${body.messages[body.messages.length - 1]?.content ?? ''}`,
        totalTokens: 7,
      });
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
    if ('status' in reply)
      return this.send(res, reply.status, { error: { message: reply.error, type: 'invalid_request_error' } });
    this.reply(res, body, reply);
  }

  private reply(res: http.ServerResponse, req: ChatRequest, reply: { text: string; totalTokens?: number }): void {
    const total = reply.totalTokens ?? 10;
    this.send(res, 200, {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [{ index: 0, message: { role: 'assistant', content: reply.text }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: Math.floor(total / 2),
        completion_tokens: total - Math.floor(total / 2),
        total_tokens: total,
      },
    });
  }

  private send(res: http.ServerResponse, status: number, body: unknown): void {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}

/** A promise with its resolver, for holding a scripted reply until the test lets it go. */
export function gate<T>(): { promise: Promise<T>; release: (value: T) => void } {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}
