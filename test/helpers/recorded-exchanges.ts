import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A request and the answer a forge gives it, written from the forge's published API description
 * (not captured from the live service: the tests have no internet).
 */
export interface Exchange {
  request: { method: string; /** Path and query, exactly as sent. */ url: string };
  response: { status: number; headers?: Record<string, string>; body?: unknown };
}

/** A request the replay server received, for the test to check against what the API requires. */
export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/**
 * A local HTTP server that answers the exchanges in order. A request other than the next one
 * expected (method and URL) gets a 500, which the adapter reports as the forge being unavailable,
 * so that a wrong path fails its test.
 */
export async function replayServer(exchanges: Exchange[]) {
  const queue = [...exchanges];
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const got: Received = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: text ? (JSON.parse(text) as unknown) : undefined,
      };
      received.push(got);
      const next = queue[0];
      if (!next || next.request.method !== got.method || next.request.url !== got.url) {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ message: `unexpected ${got.method} ${got.url}; next: ${JSON.stringify(next?.request)}` }),
        );
        return;
      }
      queue.shift();
      const body = next.response.body === undefined ? '' : JSON.stringify(next.response.body);
      response.writeHead(next.response.status, { 'content-type': 'application/json', ...next.response.headers });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    /** Exchanges not yet asked for. */
    pending: () => queue.length,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
