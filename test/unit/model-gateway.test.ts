import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openGatewayChannel, TOOL_CALL_ROUTE, type GatewayChannel } from '../../activities/harness/model-gateway';
import type { ResponseUsage } from '../../activities/harness/gateway-usage';

/**
 * The model gateway attacked from the sandbox's side: calls that would escape the run's budget
 * or bill elsewhere. A real upstream HTTP server stands for the provider; no stack is needed.
 */

const TOKEN = 'arg_test-token';
let dir: string;
let upstream: http.Server;
let upstreamUrl: string;
let seen: { url: string; headers: http.IncomingHttpHeaders }[];
/** What the upstream answers next: written by the test. */
let reply: (res: http.ServerResponse) => void;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-test-'));
  upstream = http.createServer((req, res) => {
    req.resume();
    seen.push({ url: req.url ?? '', headers: req.headers });
    reply(res);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function open(
  provider: 'anthropic' | 'openai',
  charge: (u: ResponseUsage) => Promise<void> = async () => undefined,
  admit: () => Promise<{ admitted: true }> = async () => ({ admitted: true }),
): Promise<{ gateway: GatewayChannel; used: ResponseUsage[] }> {
  seen = [];
  const used: ResponseUsage[] = [];
  const gateway = await openGatewayChannel({
    socketPath: path.join(dir, `${provider}-${Math.random().toString(36).slice(2)}.sock`),
    token: TOKEN,
    provider,
    baseUrl: provider === 'openai' ? `${upstreamUrl}/v1` : upstreamUrl,
    credential: { kind: 'api_key', value: 'sk-real' },
    idleTimeoutMs: 5000,
    admit,
    onUsage: async (u) => {
      used.push(u);
      await charge(u);
    },
  });
  return { gateway, used };
}

/** A call through the gateway's socket; resolves with the status once the response started, and aborts after `keepBytes` of body when given. */
function call(
  gateway: GatewayChannel,
  options: { path: string; headers?: Record<string, string>; body?: string; abortAfterBytes?: number },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath: gateway.socketPath,
        path: options.path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': TOKEN,
          authorization: `Bearer ${TOKEN}`,
          ...options.headers,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
          if (options.abortAfterBytes !== undefined && body.length >= options.abortAfterBytes) {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, body });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', (err) => (options.abortAfterBytes !== undefined ? undefined : reject(err)));
    req.end(options.body ?? '{}');
  });
}

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

test('a stream the CLI cuts off after its first event is still charged: its reported input and its bytes as output', async () => {
  const { gateway, used } = await open('anthropic');
  reply = (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { model: 'm', usage: { input_tokens: 100000, output_tokens: 1 } } })}\n\n`,
    );
    res.write(
      `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', delta: { text: 'x'.repeat(4000) } })}\n\n`,
    );
    // …and never ends: the CLI hangs up instead.
  };
  await call(gateway, { path: '/v1/messages', body: '{"stream":true}', abortAfterBytes: 1000 });
  await waitFor(() => used.length === 1);
  expect(used[0]!.inputTokens).toBe(100000);
  expect(used[0]!.totalTokens).toBeGreaterThanOrEqual(100001);
  await gateway.close();
});

test('an answer without usage is charged an estimate from the bytes each way, never nothing', async () => {
  const { gateway, used } = await open('anthropic');
  reply = (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'message', content: [{ type: 'text', text: 'y'.repeat(8000) }] }));
  };
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'z'.repeat(40000) }] });
  expect((await call(gateway, { path: '/v1/messages', body })).status).toBe(200);
  await waitFor(() => used.length === 1);
  expect(used[0]!.inputTokens).toBe(Math.ceil(Buffer.byteLength(body) / 4));
  expect(used[0]!.outputTokens).toBeGreaterThanOrEqual(2000);
  await gateway.close();
});

test('an answer ends only once its charge is recorded, so the next call is admitted on it', async () => {
  let recorded!: () => void;
  let charged = 0;
  const admittedOn: number[] = [];
  const { gateway, used } = await open(
    'anthropic',
    () =>
      new Promise<void>((resolve) => {
        recorded = () => {
          charged += 1;
          resolve();
        };
      }),
    async () => {
      admittedOn.push(charged);
      return { admitted: true };
    },
  );
  reply = (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'message', usage: { input_tokens: 300, output_tokens: 100 } }));
  };
  let ended = false;
  const answered = call(gateway, { path: '/v1/messages' }).then((r) => {
    ended = true;
    return r;
  });
  await waitFor(() => used.length === 1);
  // The provider has answered in full; the CLI still waits for the end while the charge is written.
  await new Promise((r) => setTimeout(r, 50));
  expect(ended).toBe(false);
  // A call that arrives meanwhile is admitted only after that charge.
  const next = call(gateway, { path: '/v1/messages' });
  await new Promise((r) => setTimeout(r, 50));
  expect(admittedOn).toEqual([0]);
  recorded();
  const { status, body } = await answered;
  expect(status).toBe(200);
  expect(JSON.parse(body).usage.input_tokens).toBe(300);
  await waitFor(() => used.length === 2);
  expect(admittedOn).toEqual([0, 1]);
  recorded();
  expect((await next).status).toBe(200);
  await gateway.close();
});

test('headers that would bill another organisation or project stay behind; the key is swapped', async () => {
  const { gateway } = await open('openai');
  reply = (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
  };
  await call(gateway, {
    path: '/v1/responses',
    headers: {
      'OpenAI-Organization': 'org-other',
      'OpenAI-Project': 'proj-other',
      'x-made-up': '1',
      'user-agent': 'codex',
    },
  });
  expect(seen).toHaveLength(1);
  const headers = seen[0]!.headers;
  expect(seen[0]!.url).toBe('/v1/responses');
  expect(headers.authorization).toBe('Bearer sk-real');
  expect(headers['user-agent']).toBe('codex');
  expect(headers).not.toHaveProperty('openai-organization');
  expect(headers).not.toHaveProperty('openai-project');
  expect(headers).not.toHaveProperty('x-made-up');
  await gateway.close();
});

test('Chat Completions (which streams without usage unless asked) and other paths are refused before the provider', async () => {
  const { gateway } = await open('openai');
  for (const p of ['/v1/chat/completions', '/v1/files', '/v1/responses/../files']) {
    const res = await call(gateway, { path: p });
    expect([p, res.status]).toEqual([p, 404]);
  }
  expect(seen).toEqual([]);
  expect(gateway.forwarded).toBe(0);
  await gateway.close();
});

test("a CLI hook's question about a tool call is answered by the gateway itself, with the run's token only, and fails closed", async () => {
  seen = [];
  const asked: unknown[] = [];
  const gateway = await openGatewayChannel({
    socketPath: path.join(dir, `hook-${Math.random().toString(36).slice(2)}.sock`),
    token: TOKEN,
    provider: 'anthropic',
    baseUrl: upstreamUrl,
    credential: { kind: 'api_key', value: 'sk-real' },
    idleTimeoutMs: 5000,
    admit: async () => ({ admitted: true }),
    onUsage: async () => undefined,
    onToolCall: async (c) => {
      asked.push(c);
      if (c.tool === 'Broken') throw new Error('database down');
      return c.tool === 'Bash' ? { decision: 'deny', reason: 'waits' } : { decision: 'allow' };
    },
  });
  try {
    const route = TOOL_CALL_ROUTE;
    const body = (tool: string) => JSON.stringify({ tool, input: { command: 'git push' } });
    expect(await call(gateway, { path: route, body: body('Bash') })).toEqual({
      status: 200,
      body: JSON.stringify({ decision: 'deny', reason: 'waits' }),
    });
    expect(JSON.parse((await call(gateway, { path: route, body: body('Read') })).body)).toEqual({ decision: 'allow' });
    // Unreadable, or undecidable: denied, never allowed.
    expect(JSON.parse((await call(gateway, { path: route, body: 'not json' })).body).decision).toBe('deny');
    expect(JSON.parse((await call(gateway, { path: route, body: body('Broken') })).body).decision).toBe('deny');
    // Another key is refused before anything is decided.
    const stranger = await call(gateway, {
      path: route,
      body: body('Read'),
      headers: { 'x-api-key': 'arg_other', authorization: 'Bearer arg_other' },
    });
    expect(stranger.status).toBe(401);
    expect(asked).toHaveLength(3);
    // Never forwarded to the provider.
    expect(seen).toEqual([]);
  } finally {
    await gateway.close();
  }
});
