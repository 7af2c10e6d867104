import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { createApp } from '../api/app';
import { LISTENER_APPLICATION_NAME } from '../api/run-event-notifier';
import { closeServer, listen } from '../api/server';
import { createLogger } from '../core/logger';
import { appendRunEvent } from '../db/run-events';
import { auth, createRun, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { openStream, type SseStream } from './helpers/sse-client';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { sessionLinkQuery } from './helpers/session-links';

/**
 * `GET /api/v1/agent/runs/{runId}/events` and its session twin: Server-Sent Events of the
 * transcript, read from PostgreSQL and woken by LISTEN/NOTIFY, on two API instances.
 */
// Instances of one deployment share the secrets key (and so can mask a run's credentials).
const ENV = { SSE_HEARTBEAT_SECONDS: '1', SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
let a: TestContext; // API, and the worker every run here runs on
let b: TestContext; // a second API instance on the same database, no worker
beforeAll(async () => {
  [a, b] = await Promise.all([createTestContext({ env: ENV }), createTestContext({ env: ENV, worker: false })]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const eventsUrl = (ctx: TestContext, runId: string, query = '') =>
  `${ctx.baseUrl}/api/v1/agent/runs/${runId}/events${query}`;

async function runEventIds(runId: string): Promise<string[]> {
  const rows = (await a.dataSource.query(`SELECT id FROM run_events WHERE run_id = $1 ORDER BY id`, [runId])) as {
    id: string;
  }[];
  return rows.map((r) => r.id);
}

async function appendNotice(runId: string, message: string): Promise<void> {
  await appendRunEvent(a.dataSource.manager, {
    runId,
    eventKey: `test-notice-${randomBytes(8).toString('hex')}`,
    kind: 'notice',
    turn: 1,
    payload: { message },
  });
}

/** A run whose agent thinks until `release`, then runs a command and answers. */
async function heldRun(key: string, config: Record<string, unknown> = {}) {
  const marker = uniqueName('sse');
  const hold = gate<{ text: string; toolCalls?: { name: string; arguments: Record<string, unknown> }[] }>();
  a.model.script(marker, (_req, call) =>
    call === 1 ? { hold: hold.promise } : { text: `Finished ${marker}: the output was printed.` },
  );
  const runId = await createRun(a, key, { prompt: `Stream me ${marker}`, config });
  await a.model.waitForCalls(marker, 1);
  const release = () =>
    hold.release({
      text: 'Printing a greeting.',
      toolCalls: [{ name: 'run_command', arguments: { command: `echo hello-${marker}` } }],
    });
  return { runId, marker, release };
}

const endOf = (stream: SseStream) => stream.waitForEvent((e) => e.event === 'end');
const data = (stream: SseStream) =>
  stream.events.filter((e) => e.event !== 'end').map((e) => JSON.parse(e.data) as Record<string, unknown>);

test('two API instances stream one run as it runs on one worker: every event once, in order, then `end`', async () => {
  const { key } = await a.newTeamKey();
  const { runId, marker, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const streams = await Promise.all([a, b].map((ctx) => openStream(eventsUrl(ctx, runId), auth(key))));
  for (const stream of streams) {
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(stream.headers['cache-control']).toBe('no-store');
    expect(stream.headers['x-accel-buffering']).toBe('no');
  }
  // What was written before the streams opened arrives first.
  await Promise.all(streams.map((s) => s.waitForEvent((e) => e.event === 'assistant' || e.event === 'config')));
  release();
  const ends = await Promise.all(streams.map(endOf));

  const ids = await runEventIds(runId);
  const rows = (await a.dataSource.query(
    `SELECT id, kind, turn, payload, created_at FROM run_events WHERE run_id = $1 ORDER BY id`,
    [runId],
  )) as { id: string; kind: string; turn: number; payload: unknown; created_at: Date }[];
  for (const [i, stream] of streams.entries()) {
    expect(stream.retries).toEqual([3000]);
    expect(stream.ids()).toEqual(ids);
    expect(stream.events.map((e) => e.event)).toEqual([...rows.map((r) => r.kind), 'end']);
    // Each event's data is the entry as stored, on one line.
    const data = stream.events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, unknown>);
    expect(data).toEqual(
      rows.map((r) => ({
        id: r.id,
        run_id: runId,
        kind: r.kind,
        turn: r.turn,
        created_at: r.created_at.toISOString(),
        payload: r.payload,
      })),
    );
    expect(JSON.parse(ends[i]!.data)).toEqual({ run_id: runId, state: 'SUCCEEDED' });
    await stream.waitForClose(5_000);
  }
  // The second instance saw the worker's writes as they happened: the command and its output.
  const command = data(streams[1]!).find((d) => d.kind === 'tool_call');
  expect(command?.payload).toMatchObject({ name: 'run_command', output: expect.stringContaining(`hello-${marker}`) });
  expect(
    data(streams[1]!)
      .filter((d) => d.kind === 'state')
      .map((d) => (d.payload as { state: string }).state),
  ).toEqual(['QUEUED', 'INPROGRESS', 'SUCCEEDED']);
});

test('resuming from an id in the middle, by `Last-Event-ID` or `?after=`, loses and repeats nothing', async () => {
  const { key } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  release();
  await waitForState(a, key, runId, ['SUCCEEDED']);
  const ids = await runEventIds(runId);
  expect(ids.length).toBeGreaterThanOrEqual(6);
  const mid = ids[Math.floor(ids.length / 2)]!;
  const tail = ids.filter((id) => BigInt(id) > BigInt(mid));

  const resumed = async (query: string, headers: Record<string, string>) => {
    const stream = await openStream(eventsUrl(b, runId, query), { ...auth(key), ...headers });
    await endOf(stream);
    return stream.ids();
  };
  expect(await resumed('', { 'Last-Event-ID': mid })).toEqual(tail);
  expect(await resumed(`?after=${mid}`, {})).toEqual(tail);
  // Both: `after` wins.
  expect(await resumed(`?after=${mid}`, { 'Last-Event-ID': ids[0]! })).toEqual(tail);
  expect(await resumed('?after=0', {})).toEqual(ids);
  expect(await resumed('', {})).toEqual(ids);
  expect(await resumed(`?after=${ids[ids.length - 1]}`, {})).toEqual([]);
});

test('a client that drops mid-run and resumes with Last-Event-ID on the other instance gets the rest exactly once', async () => {
  const { key } = await a.newTeamKey();
  const { runId, marker, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const first = await openStream(eventsUrl(a, runId), auth(key));
  await first.waitForEvent((e) => e.event === 'config');
  first.close();
  const before = first.ids();
  // Events are written while no client is connected.
  release();
  await waitForState(a, key, runId, ['INPROGRESS', 'SUCCEEDED']);
  await a.model.waitForCalls(marker, 2);
  const second = await openStream(eventsUrl(b, runId), { ...auth(key), 'Last-Event-ID': before[before.length - 1]! });
  await endOf(second);
  const all = [...before, ...second.ids()];
  expect(all).toEqual(await runEventIds(runId));
  expect(new Set(all).size).toBe(all.length);
});

test("another team's run, an unknown run and bad resume points are problem documents, before any streaming", async () => {
  const { key } = await a.newTeamKey();
  const { key: otherKey } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  try {
    const problem = async (url: string, headers: Record<string, string>, status: number, detail: RegExp) => {
      const res = await openStream(url, headers);
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.body)).toMatchObject({ status, detail: expect.stringMatching(detail) });
    };
    await problem(eventsUrl(b, runId), auth(otherKey), 404, new RegExp(`No run ${runId}`));
    await problem(eventsUrl(a, runId), auth(otherKey), 404, /No run/);
    await problem(eventsUrl(b, '01936f1e-8b0a-7c3e-9d52-4f6a1b2c3d4e'), auth(key), 404, /No run/);
    await problem(eventsUrl(b, 'not-a-run'), auth(key), 404, /No run/);
    await problem(eventsUrl(b, runId), {}, 401, /Authorization/);
    for (const after of ['abc', '-1', '1.5', '', '1234567890123456789']) {
      await problem(eventsUrl(b, runId, `?after=${after}`), auth(key), 400, /`after` must be an event id/);
    }
    await problem(eventsUrl(b, runId, '?after=1&after=2'), auth(key), 400, /only once/);
    await problem(eventsUrl(b, runId), { ...auth(key), 'Last-Event-ID': 'x7' }, 400, /`Last-Event-ID` must be/);
    await problem(eventsUrl(b, runId, '?from=3'), auth(key), 400, /Unknown query parameter `from`/);
    // HEAD answers the headers alone, without holding the connection.
    const head = await fetch(eventsUrl(b, runId), { method: 'HEAD', headers: auth(key) });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/event-stream');
  } finally {
    release();
  }
});

test('heartbeats keep an idle stream alive; a stream left open is ended by the server shutting down', async () => {
  const { key } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const { server, close } = await extraApi();
  try {
    const stream = await openStream(`${urlOf(server)}/api/v1/agent/runs/${runId}/events`, auth(key));
    await stream.waitForEvent((e) => e.event === 'config');
    // SSE_HEARTBEAT_SECONDS=1: a comment each second while the agent thinks.
    await stream.waitForComments(2, 5_000);
    expect(stream.comments.slice(0, 2)).toEqual(['ping', 'ping']);
    expect(stream.closed).toBe(false);

    // Shutdown ends the stream (no `end`: the client reconnects elsewhere) and is not held by it.
    await close();
    await stream.waitForClose(5_000);
    expect(stream.events.some((e) => e.event === 'end')).toBe(false);
  } finally {
    release();
    await close();
  }
});

test('a run within its idle window keeps its stream: a follow-up continues it there; past the window it ends', async () => {
  const { key } = await a.newTeamKey();
  const { runId, marker, release } = await heldRun(key, { idle_timeout_minutes: 1 });
  const stream = await openStream(eventsUrl(b, runId), auth(key));
  try {
    release();
    const succeeded = (from = 0) =>
      stream.waitForEvent((e) => e.event === 'state' && JSON.parse(e.data).payload.state === 'SUCCEEDED', 30_000, from);
    const firstEnd = await succeeded();
    const at = stream.events.indexOf(firstEnd);
    await a.api
      .post(`/api/v1/agent/runs/${runId}/followups`)
      .set(auth(key))
      .send({ message: `More ${marker}` })
      .expect(200);
    await stream.waitForEvent((e) => e.event === 'followup', 30_000, at);
    await succeeded(at + 1);
    // Not ended after the first SUCCEEDED: the window was open.
    expect(stream.events.some((e) => e.event === 'end')).toBe(false);
    const ids = await runEventIds(runId);
    await stream.waitForEvent((e) => e.id === ids[ids.length - 1]);
    expect(stream.ids()).toEqual(ids);
  } finally {
    stream.close();
  }

  // Two seconds of the window left: a stream connecting now gets the backlog, then `end` when it closes.
  await a.dataSource.query(`UPDATE runs SET ended_at = clock_timestamp() - interval '58 seconds' WHERE run_id = $1`, [
    runId,
  ]);
  const late = await openStream(eventsUrl(a, runId), auth(key));
  const all = await runEventIds(runId);
  const last = await late.waitForEvent((e) => e.id === all[all.length - 1]);
  const end = await endOf(late);
  expect(end.at - last.at).toBeGreaterThan(500);
  expect(late.ids()).toEqual(all);
  expect(JSON.parse(end.data)).toEqual({ run_id: runId, state: 'SUCCEEDED' });
});

test('secrets are masked as on the transcript page, in the API stream and in the session stream', async () => {
  const { key } = await b.newTeamKey();
  const token = `tok-${randomBytes(12).toString('hex')}`;
  // On the instance without a worker: the run stays QUEUED and its MCP server is never contacted.
  const runId = await createRun(b, key, {
    prompt: `Mask ${uniqueName('mask')}`,
    config: {
      mcp_servers: { tracker: { url: 'https://mcp.example.com/mcp', headers: { Authorization: `Bearer ${token}` } } },
    },
  });
  await appendNotice(runId, `the server said: bad token ${token} <b>`);
  const [{ session_id: sessionId }] = (await b.dataSource.query(`SELECT session_id FROM runs WHERE run_id = $1`, [
    runId,
  ])) as [{ session_id: string }];

  const api = await openStream(eventsUrl(b, runId), auth(key));
  const notice = await api.waitForEvent((e) => e.event === 'notice');
  api.close();
  expect(notice.data).not.toContain(token);
  expect(JSON.parse(notice.data).payload).toEqual({ message: 'the server said: bad token *** <b>' });

  // No key: the transcript link's signature is the capability. Same events, with their HTML as
  // the page renders it.
  const signed = sessionLinkQuery(a, sessionId);
  const session = await openStream(`${a.baseUrl}/sessions/${sessionId}/events?${signed}`);
  expect(session.status).toBe(200);
  const html = await session.waitForEvent((e) => e.event === 'notice');
  session.close();
  expect(html.id).toBe(notice.id);
  expect(html.data).not.toContain(token);
  const htmlData = JSON.parse(html.data) as { html: string; payload: unknown };
  expect(htmlData.payload).toEqual({ message: 'the server said: bad token *** <b>' });
  const page = await a.api.get(`/sessions/${sessionId}?${signed}`).expect(200);
  expect(page.text).toContain(htmlData.html);
  expect(htmlData.html).toContain('bad token *** &lt;b&gt;');
  // A session that is gone, with the link it had: 404 (without a valid link, test/session-links.test.ts: 403).
  const gone = 'A'.repeat(32);
  expect((await openStream(`${a.baseUrl}/sessions/${gone}/events?${sessionLinkQuery(a, gone)}`)).status).toBe(404);
  expect((await openStream(`${a.baseUrl}/sessions/${sessionId}/events?after=x&${signed}`)).status).toBe(400);
});

test('a client that stops reading is dropped without wedging the server; others keep streaming', async () => {
  const { key } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const { server, close } = await extraApi();
  try {
    // 48 MiB of transcript: more than the kernel's socket buffers hold.
    const big = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 48; i++) await appendNotice(runId, big);
    const total = 48 * big.length;
    const lastBig = (await runEventIds(runId)).at(-1)!;

    // A client that sends its request and never reads.
    const port = (server.address() as net.AddressInfo).port;
    const stuck = net.connect(port, '127.0.0.1');
    stuck.pause();
    let received = 0;
    let stuckClosed = false;
    stuck.on('data', (chunk: Buffer) => (received += chunk.length));
    stuck.on('close', () => (stuckClosed = true));
    stuck.on('error', () => undefined);
    stuck.write(
      `GET /api/v1/agent/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    );
    const reader = await openStream(`${urlOf(server)}/api/v1/agent/runs/${runId}/events?after=${lastBig}`, auth(key));
    const connections = () => new Promise<number>((ok, fail) => server.getConnections((e, n) => (e ? fail(e) : ok(n))));
    await waitFor(connections, (n) => n === 2, 'both clients to connect', 5_000);

    // Within two heartbeats of its buffers filling, the server lets it go; the reader stays.
    await waitFor(connections, (n) => n === 1, 'the stuck client to be dropped', 15_000);
    expect(reader.closed).toBe(false);
    await appendNotice(runId, 'still streaming');
    await reader.waitForEvent((e) => e.event === 'notice' && e.data.includes('still streaming'), 5_000);
    await fetch(`${urlOf(server)}/healthz`).then((r) => expect(r.status).toBe(200));

    // What reached the stuck client is what the sockets held, not the whole backlog.
    stuck.resume();
    await waitFor(async () => stuckClosed, Boolean, 'the stuck socket to close', 10_000);
    expect(received).toBeLessThan(total);
    reader.close();
  } finally {
    release();
    await close();
  }
});

test('a lost LISTEN connection is re-established and nothing written meanwhile is missed', async () => {
  const { key } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const stream = await openStream(eventsUrl(b, runId), auth(key));
  try {
    await stream.waitForEvent((e) => e.event === 'config');
    await a.dataSource.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
      LISTENER_APPLICATION_NAME,
    ]);
    await appendNotice(runId, 'while nobody listened');
    await stream.waitForEvent((e) => e.data.includes('while nobody listened'), 15_000);
    await appendNotice(runId, 'after reconnecting');
    await stream.waitForEvent((e) => e.data.includes('after reconnecting'), 15_000);
    release();
    await endOf(stream);
    expect(stream.ids()).toEqual(await runEventIds(runId));
  } finally {
    stream.close();
    release();
  }
});

test('latency: from writing an event to an SSE client on another instance (median of 200)', async () => {
  const { key } = await a.newTeamKey();
  const { runId, release } = await heldRun(key, { idle_timeout_minutes: 0 });
  const stream = await openStream(eventsUrl(b, runId), auth(key));
  try {
    await stream.waitForEvent((e) => e.event === 'config');
    const latencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      const from = stream.events.length;
      const started = performance.now();
      await appendNotice(runId, `latency ${i}`);
      const got = await stream.waitForEvent((e) => e.event === 'notice', 5_000, from);
      expect(JSON.parse(got.data).payload.message).toBe(`latency ${i}`);
      latencies.push(got.at - started);
    }
    latencies.sort((x, y) => x - y);
    const median = (latencies[99]! + latencies[100]!) / 2;
    const p95 = latencies[189]!;
    console.log(
      `SSE latency, write to client on another API instance: median ${median.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms, max ${latencies[199]!.toFixed(2)} ms (200 events)`,
    );
    expect(median).toBeLessThan(250);
    const ids = stream.ids();
    expect(new Set(ids).size).toBe(ids.length);
  } finally {
    stream.close();
    release();
  }
});

/** A third API instance whose server the test holds (to count its connections, or shut it down). */
async function extraApi(): Promise<{ server: Server; close: () => Promise<void> }> {
  const app = createApp({
    config: a.config,
    dataSource: a.dataSource,
    temporalClient: a.client,
    temporalConnection: a.connection,
    logger: createLogger('error', 'test'),
  });
  const server = await listen(app, 0, '127.0.0.1');
  let closing: Promise<void> | undefined;
  return { server, close: () => (closing ??= closeServer(server)) };
}

const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

test('streams are capped per client address, per run and in all: past a cap 429 with Retry-After, counted in metrics', async () => {
  const capped = await createTestContext({
    worker: false,
    env: {
      ...ENV,
      TRUST_PROXY_HOPS: '1',
      SSE_MAX_STREAMS_PER_CLIENT: '2',
      SSE_MAX_STREAMS_PER_RUN: '3',
      SSE_MAX_STREAMS: '4',
    },
  });
  const opened: SseStream[] = [];
  try {
    const { key } = await a.newTeamKey();
    const [first, second] = await Promise.all([
      createRun(a, key, { prompt: `Cap one ${uniqueName('cap')}` }),
      createRun(a, key, { prompt: `Cap two ${uniqueName('cap')}` }),
    ]);
    const open = async (runId: string, client: string) => {
      const stream = await openStream(eventsUrl(capped, runId), { ...auth(key), 'X-Forwarded-For': client });
      if (stream.status === 200) opened.push(stream);
      return stream;
    };
    const refusals = async () => (await capped.api.get('/metrics')).text;
    expect((await open(first, '198.51.100.1')).status).toBe(200);
    expect((await open(first, '198.51.100.1')).status).toBe(200);
    const perClient = await open(first, '198.51.100.1');
    expect(perClient.status).toBe(429);
    expect(JSON.parse(perClient.body)).toMatchObject({ error_code: 'rate_limited' });
    expect(JSON.parse(perClient.body).detail).toContain('SSE_MAX_STREAMS_PER_CLIENT');
    expect(perClient.headers['retry-after']).toBe('5');

    expect((await open(first, '198.51.100.2')).status).toBe(200);
    const perRun = await open(first, '198.51.100.3');
    expect([perRun.status, JSON.parse(perRun.body).detail]).toEqual([
      429,
      expect.stringContaining('SSE_MAX_STREAMS_PER_RUN'),
    ]);

    expect((await open(second, '198.51.100.3')).status).toBe(200);
    const total = await open(second, '198.51.100.4');
    expect([total.status, JSON.parse(total.body).detail]).toEqual([429, expect.stringContaining('(SSE_MAX_STREAMS)')]);
    expect(await refusals()).toMatch(/agent_runs_event_streams_refused_total\{cap="total"\} [1-9]/);

    // A stream that ends gives its place back.
    opened.shift()!.close();
    await waitFor(
      async () => (await open(second, '198.51.100.4')).status,
      (s) => s === 200,
      'a freed place',
    );
  } finally {
    for (const stream of opened) stream.close();
    await capped.close();
  }
});
