import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as a webhook receiver got it. */
export interface ReceivedRequest {
  headers: Record<string, string>;
  /** The raw body, as a receiver must verify it. */
  body: string;
  /** `performance.now()` when the whole body had arrived. */
  receivedAt: number;
  /** What the receiver answered: an HTTP status, or `drop` (the connection was closed unanswered). */
  answer: number | 'drop';
}

/** What to answer the `index`-th request (from 0): a status, `drop`, or a redirect. */
export type Answer = number | 'drop' | { redirect: string; status: number };

/**
 * A local HTTP server standing in for a webhook receiver: it records every request and answers
 * as the test says, and lets a test await a condition on what it got.
 */
export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly server = http.createServer((req, res) => void this.handle(req, res));
  private readonly waiters = new Set<() => void>();

  constructor(private answer: (request: ReceivedRequest, index: number) => Answer = () => 204) {}

  /** Starts listening on loopback; returns the URL to register. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/agent-runs`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  answerWith(answer: (request: ReceivedRequest, index: number) => Answer): void {
    this.answer = answer;
  }

  /** The requests by `webhook-id`, first receipt first: what a receiver keeps after dropping repeats. */
  unique(): ReceivedRequest[] {
    const seen = new Map<string, ReceivedRequest>();
    for (const r of this.requests) if (!seen.has(r.headers['webhook-id']!)) seen.set(r.headers['webhook-id']!, r);
    return [...seen.values()];
  }

  /** Resolves once `done` holds for the requests received (checked at each request), or fails at the deadline. */
  until(done: (requests: ReceivedRequest[]) => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    if (done(this.requests)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done(this.requests)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`Timed out waiting for ${what}; got ${this.requests.length} requests`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request: ReceivedRequest = {
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body: Buffer.concat(chunks).toString('utf8'),
      receivedAt: performance.now(),
      answer: 0,
    };
    const answer = this.answer(request, this.requests.length);
    request.answer = typeof answer === 'object' ? answer.status : answer;
    this.requests.push(request);
    if (answer === 'drop') req.socket.destroy();
    else if (typeof answer === 'object') res.writeHead(answer.status, { location: answer.redirect }).end();
    else res.writeHead(answer).end();
    for (const check of [...this.waiters]) check();
  }
}
