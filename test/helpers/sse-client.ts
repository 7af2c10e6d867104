import http, { type IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';

export interface ReceivedEvent {
  id?: string;
  event?: string;
  data: string;
  /** performance.now() when the event was parsed. */
  at: number;
}

/** A Server-Sent Events response as a client sees it, parsed as it arrives. */
export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The whole body of a response that is no event stream (a problem document). */
  body: string;
  events: ReceivedEvent[];
  comments: string[];
  retries: number[];
  /** Whether the server has closed the response. */
  closed: boolean;
  /** Resolves with the first event (from index `from`) matching `match`; rejects after `timeoutMs`. */
  waitForEvent(match: (e: ReceivedEvent) => boolean, timeoutMs?: number, from?: number): Promise<ReceivedEvent>;
  /** Resolves once `count` comments have arrived. */
  waitForComments(count: number, timeoutMs?: number): Promise<void>;
  /** Resolves once the server has closed the response. */
  waitForClose(timeoutMs?: number): Promise<void>;
  /** Ids of the transcript events received (not `end`). */
  ids(): string[];
  close(): void;
}

/** Opens `url` as an event stream; resolves once the response headers (or a whole non-stream body) arrived. */
export function openStream(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const waiters = new Set<() => void>();
    const notify = () => {
      for (const check of [...waiters]) check();
    };
    const parser = createParser({
      onEvent: (e) => {
        stream.events.push({ id: e.id, event: e.event, data: e.data, at: performance.now() });
        notify();
      },
      onComment: (c) => {
        stream.comments.push(c);
        notify();
      },
      onRetry: (ms) => stream.retries.push(ms),
    });
    const waitUntil = (done: () => boolean, what: string, timeoutMs: number) =>
      new Promise<void>((ok, fail) => {
        const check = () => {
          if (!done()) return;
          clearTimeout(timer);
          waiters.delete(check);
          ok();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          fail(new Error(`Timed out waiting for ${what} on ${url}; got ${JSON.stringify(stream.events.slice(-5))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    const req = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } });
    const stream: SseStream = {
      status: 0,
      headers: {},
      body: '',
      events: [],
      comments: [],
      retries: [],
      closed: false,
      async waitForEvent(match, timeoutMs = 30_000, from = 0) {
        let found: ReceivedEvent | undefined;
        await waitUntil(
          () => (found = stream.events.slice(from).find(match)) !== undefined || stream.closed,
          'an event',
          timeoutMs,
        );
        if (!found) throw new Error(`The stream closed without the event; got ${JSON.stringify(stream.events)}`);
        return found;
      },
      waitForComments: (count, timeoutMs = 30_000) =>
        waitUntil(() => stream.comments.length >= count, `${count} comments`, timeoutMs),
      waitForClose: (timeoutMs = 30_000) => waitUntil(() => stream.closed, 'the end of the response', timeoutMs),
      ids: () => stream.events.filter((e) => e.event !== 'end').map((e) => e.id!),
      close: () => req.destroy(),
    };
    req.on('response', (res) => {
      stream.status = res.statusCode ?? 0;
      stream.headers = res.headers;
      res.setEncoding('utf8');
      const isStream = String(res.headers['content-type']).startsWith('text/event-stream');
      res.on('data', (chunk: string) => (isStream ? parser.feed(chunk) : (stream.body += chunk)));
      res.on('close', () => {
        stream.closed = true;
        notify();
        if (!isStream) resolve(stream);
      });
      if (isStream) resolve(stream);
    });
    req.on('error', (err) => {
      stream.closed = true;
      notify();
      if (stream.status === 0) reject(err);
    });
  });
}
