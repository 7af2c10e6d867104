import { Client as PgClient } from 'pg';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { auth, createRun, waitForState, type RunBody } from './helpers/runs';
import { sessionPagePath } from './helpers/session-links';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { WebhookReceiver, type ReceivedRequest } from './helpers/webhook-receiver';
import { webhookDeliveryWorkflowId, webhookSweepScheduleId } from '../workflows/webhook-contract';

/** Loopback receivers are private addresses: only the operator's allow-list opens them. */
const RECEIVER_ENV = {
  OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100',
  WEBHOOK_RETRY_MAX_INTERVAL_MS: '400',
};

interface CreatedWebhook {
  id: string;
  url: string;
  event_types: string[];
  secret: string;
  created_at: string;
}

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  run_id: string;
  status: string;
  attempts: number;
  last_http_status: number | null;
  last_error: string | null;
  created_at: string;
  last_attempt_at: string | null;
  finished_at: string | null;
  attempt_log: { attempt: number; at: string; duration_ms: number; http_status?: number; error?: string }[];
}

interface Payload {
  type: string;
  timestamp: string;
  data: RunBody;
}

let ctx: TestContext;
let listener: PgClient;
/** When each state event's transaction committed (its notification arrived), by event id. */
const committedAt = new Map<string, number>();
/** Delivery latencies of the test's deliveries to receivers that answer at once, in ms. */
const latencies: { fromCommit: number; fromInsert: number }[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ env: RECEIVER_ENV });
  listener = new PgClient({ connectionString: ctx.stack.databaseUrl });
  await listener.connect();
  listener.on('notification', (n) => {
    if (n.payload && !committedAt.has(n.payload)) committedAt.set(n.payload, performance.now());
  });
  await listener.query('LISTEN webhook_deliveries');
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

afterAll(async () => {
  if (latencies.length) {
    const fromCommit = latencies.map((l) => l.fromCommit);
    console.log(
      `webhook delivery latency over ${latencies.length} deliveries: median ${median(fromCommit).toFixed(1)} ms ` +
        `from the state change's commit (min ${Math.min(...fromCommit).toFixed(1)}, max ${Math.max(...fromCommit).toFixed(1)}), ` +
        `median ${median(latencies.map((l) => l.fromInsert)).toFixed(1)} ms from its insert`,
    );
  }
  await listener?.end();
  for (const r of receivers) await r.stop();
  await ctx?.close();
});

async function startReceiver(answer?: ConstructorParameters<typeof WebhookReceiver>[0]) {
  const receiver = new WebhookReceiver(answer);
  receivers.push(receiver);
  return { receiver, url: await receiver.start() };
}

async function createWebhook(c: TestContext, key: string, body: Record<string, unknown>): Promise<CreatedWebhook> {
  const res = await c.api.post('/api/v1/agent/webhooks').set(auth(key)).send(body);
  if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as CreatedWebhook;
}

async function deliveries(c: TestContext, key: string, webhookId: string, query = ''): Promise<Delivery[]> {
  const res = await c.api.get(`/api/v1/agent/webhooks/${webhookId}/deliveries${query}`).set(auth(key));
  if (res.status !== 200) throw new Error(`deliveries failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { deliveries: Delivery[] }).deliveries;
}

/** A run that answers at once; resolves with the run when it SUCCEEDED. */
async function succeededRun(c: TestContext, key: string, answer = 'done'): Promise<RunBody> {
  const marker = uniqueName('hooked');
  c.model.script(marker, () => ({ text: answer }));
  const runId = await createRun(c, key, { prompt: `Work ${marker}` });
  return waitForState(c, key, runId, ['SUCCEEDED']);
}

/** The run's state entries in order, as the transcript has them. */
async function stateEvents(c: TestContext, runId: string): Promise<{ id: string; state: string; createdAt: Date }[]> {
  const rows = (await c.dataSource.query(
    `SELECT id::text AS id, payload->>'state' AS state, created_at FROM run_events
      WHERE run_id = $1 AND kind = 'state' ORDER BY run_events.id`,
    [runId],
  )) as { id: string; state: string; created_at: Date }[];
  return rows.map((r) => ({ id: r.id, state: r.state, createdAt: r.created_at }));
}

/** Verifies a request as a receiver would, with the standardwebhooks library; throws when it does not verify. */
function verify(secret: string, request: ReceivedRequest): Payload {
  return new Webhook(secret).verify(request.body, request.headers) as Payload;
}

/**
 * Records how long each first receipt took from its state change's commit (receivers that answer
 * at once); returns those of these requests.
 */
async function recordLatencies(
  c: TestContext,
  key: string,
  webhookId: string,
  received: ReceivedRequest[],
): Promise<number[]> {
  const recorded: number[] = [];
  const byId = new Map((await deliveries(c, key, webhookId)).map((d) => [d.id, d]));
  for (const request of received) {
    const delivery = byId.get(request.headers['webhook-id']!)!;
    const commit = committedAt.get(delivery.event_id);
    const [{ inserted }] = (await c.dataSource.query(
      `SELECT extract(epoch FROM created_at) * 1000 AS inserted FROM run_events WHERE id = $1`,
      [delivery.event_id],
    )) as [{ inserted: string }];
    if (commit === undefined) continue;
    latencies.push({
      fromCommit: request.receivedAt - commit,
      fromInsert: performance.timeOrigin + request.receivedAt - Number(inserted),
    });
    recorded.push(request.receivedAt - commit);
  }
  return recorded;
}

test('a webhook is created with a Standard Webhooks secret shown once, kept encrypted, and listed without it', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const res = await ctx.api.post('/api/v1/agent/webhooks').set(auth(key)).send({ url: 'http://127.0.0.1:9/hooks' });
  expect(res.status).toBe(201);
  const created = res.body as CreatedWebhook;
  expect(res.headers.location).toBe(`/api/v1/agent/webhooks/${created.id}`);
  expect(created).toEqual({
    id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    url: 'http://127.0.0.1:9/hooks',
    event_types: ['run.state_changed'],
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    created_at: expect.any(String),
  });
  expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

  const { id, url, event_types, created_at } = created;
  const list = await ctx.api.get('/api/v1/agent/webhooks').set(auth(key));
  expect(list.body).toEqual({ webhooks: [{ id, url, event_types, created_at }], page_info: { has_next_page: false } });
  const one = await ctx.api.get(`/api/v1/agent/webhooks/${id}`).set(auth(key));
  expect(one.body).toEqual({ id, url, event_types, created_at });
  expect(JSON.stringify([list.body, one.body])).not.toContain(created.secret.slice(6));

  const [stored] = (await ctx.dataSource.query(`SELECT secret FROM webhooks WHERE id = $1`, [id])) as [
    { secret: string },
  ];
  expect(stored.secret).toMatch(/^enc:v2:fp-[0-9a-f]{12}:/);
  expect(stored.secret).not.toContain(created.secret.slice(6));

  // Explicit event types: the one there is, given twice, is kept once.
  const explicit = await createWebhook(ctx, key, {
    url: 'https://127.0.0.1/x',
    event_types: ['run.state_changed', 'run.state_changed'],
  });
  expect(explicit.event_types).toEqual(['run.state_changed']);
});

test('a team has at most 20 webhooks; the 21st is 409 and records nothing', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const created = await Promise.all(
    Array.from({ length: 21 }, (_, i) =>
      ctx.api
        .post('/api/v1/agent/webhooks')
        .set(auth(key))
        .send({ url: `http://127.0.0.1:9/hook-${i}` }),
    ),
  );
  expect(created.map((r) => r.status).sort()).toEqual([...Array(20).fill(201), 409]);
  const refused = created.find((r) => r.status === 409)!;
  expect(refused.body).toMatchObject({ error_code: 'conflict', retryable: false });
  expect(refused.body.detail).toMatch(/20 webhooks.*delete one/);
  const list = await ctx.api.get('/api/v1/agent/webhooks').set(auth(key));
  expect((list.body as { webhooks: unknown[] }).webhooks).toHaveLength(20);
});

test('every state change of a run, follow-ups included, reaches the receiver signed per Standard Webhooks, with the run as it was', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const { receiver, url } = await startReceiver();
  const hook = await createWebhook(ctx, key, { url });

  const first = await succeededRun(ctx, key, 'first answer');
  const runId = first.run_id;
  await receiver.until((r) => r.length >= 3, 'the first turn’s three state changes');
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'And once more' });
  expect(followup.status).toBe(200);
  const second = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  await receiver.until((r) => r.length >= 6, 'the second turn’s state changes');

  const events = await stateEvents(ctx, runId);
  expect(events.map((e) => e.state)).toEqual([
    'QUEUED',
    'INPROGRESS',
    'SUCCEEDED',
    'QUEUED',
    'INPROGRESS',
    'SUCCEEDED',
  ]);
  expect(receiver.requests).toHaveLength(6); // a receiver that answers 2xx gets each once
  const log = await waitFor(
    () => deliveries(ctx, key, hook.id),
    (l) => l.length === 6 && l.every((d) => d.status === 'succeeded'),
    'every delivery to be recorded',
  );
  // Newest event first; one delivery per state change, all succeeded at the first attempt.
  expect(log.map((d) => d.event_id)).toEqual(events.map((e) => e.id).reverse());
  for (const d of log) {
    expect(d).toMatchObject({ event_type: 'run.state_changed', run_id: runId, status: 'succeeded', attempts: 1 });
    expect(d.last_http_status).toBe(204);
    expect(d.attempt_log).toEqual([
      { attempt: 1, at: d.last_attempt_at, duration_ms: expect.any(Number), http_status: 204 },
    ]);
  }

  // Each request verifies with the secret; in the order of their events they are every state.
  const eventOf = new Map(log.map((d) => [d.id, d.event_id]));
  const inEventOrder = [...receiver.requests].sort(
    (a, b) => Number(eventOf.get(a.headers['webhook-id']!)) - Number(eventOf.get(b.headers['webhook-id']!)),
  );
  const payloads = inEventOrder.map((r) => verify(hook.secret, r));
  expect(payloads.map((p) => p.type)).toEqual(Array(6).fill('run.state_changed'));
  expect(payloads.map((p) => p.data.state)).toEqual(events.map((e) => e.state));
  expect(payloads.map((p) => p.timestamp)).toEqual(events.map((e) => e.createdAt.toISOString()));
  expect(payloads.map((p) => p.data.run_id)).toEqual(Array(6).fill(runId));
  for (const r of receiver.requests) {
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(Number(r.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
  }
  // The run as GET showed it at that change: the SUCCEEDED ones are what the test read then, but
  // for the session_link, signed as of the change (so that every attempt sends the same bytes).
  const withoutLink = ({ session_link: _, ...rest }: RunBody) => rest;
  expect(withoutLink(payloads[2]!.data)).toEqual(withoutLink(first));
  expect(withoutLink(payloads[5]!.data)).toEqual(withoutLink(second));
  for (const p of payloads.filter((p) => p.data.session_link !== undefined)) {
    const link = new URL(p.data.session_link as string);
    expect(link.pathname).toBe(new URL(first.session_link as string).pathname);
    const expires = Math.ceil(Date.parse(p.timestamp) / 1000) + ctx.config.sessionLinkTtlSeconds;
    expect(Number(link.searchParams.get('expires'))).toBe(expires);
    expect((await ctx.api.get(sessionPagePath(link))).status).toBe(200);
  }
  expect(payloads[0]!.data).toMatchObject({ state: 'QUEUED', is_run_type_cancellable: true });
  expect(payloads[0]!.data.started_at).toBeUndefined();
  expect(payloads[4]!.data).toMatchObject({ state: 'INPROGRESS', started_at: first.started_at });

  // Started at commit, not by the minute's sweep: within moments of the change.
  const measured = await recordLatencies(ctx, key, hook.id, receiver.unique());
  expect(measured).toHaveLength(6);
  expect(median(measured)).toBeLessThan(2000);
});

test('a tampered body and a stale timestamp are rejected by the standardwebhooks library', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const { receiver, url } = await startReceiver();
  const hook = await createWebhook(ctx, key, { url });
  await succeededRun(ctx, key);
  await receiver.until((r) => r.length >= 3, 'three deliveries');
  await recordLatencies(ctx, key, hook.id, receiver.unique());
  const request = receiver.requests[0]!;
  expect(verify(hook.secret, request).type).toBe('run.state_changed');

  const tampered = request.body.replace(/"state":"(\w+)"/, '"state":"CANCELLED"');
  expect(tampered).not.toBe(request.body);
  expect(() => new Webhook(hook.secret).verify(tampered, request.headers)).toThrow(
    new WebhookVerificationError('No matching signature found'),
  );
  // Another secret (another webhook's) does not verify it either.
  const other = await createWebhook(ctx, key, { url });
  expect(() => verify(other.secret, request)).toThrow(WebhookVerificationError);
  // Replayed ten minutes later: the library's five-minute tolerance refuses it.
  const now = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 10 * 60_000);
  try {
    expect(() => verify(hook.secret, request)).toThrow(new WebhookVerificationError('Message timestamp too old'));
  } finally {
    now.mockRestore();
  }
});

test('a receiver that fails the first times (500s, then a dropped connection) ends up with every event exactly once by webhook-id', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const failures: ('drop' | number)[] = [500, 500, 503, 'drop'];
  const { receiver, url } = await startReceiver((_request, index) => failures[index] ?? 200);
  const hook = await createWebhook(ctx, key, { url });
  const run = await succeededRun(ctx, key);
  const events = await stateEvents(ctx, run.run_id);

  await waitFor(
    () => deliveries(ctx, key, hook.id),
    (log) => log.length === 3 && log.every((d) => d.status === 'succeeded'),
    'every delivery to succeed',
  );
  const unique = receiver.unique();
  expect(unique).toHaveLength(3);
  expect(receiver.requests.length).toBe(3 + failures.length);
  // Every attempt is signed afresh and verifies; a repeat carries the same id and the same body.
  for (const r of receiver.requests) verify(hook.secret, r);
  for (const first of unique) {
    const repeats = receiver.requests.filter((r) => r.headers['webhook-id'] === first.headers['webhook-id']);
    expect(new Set(repeats.map((r) => r.body)).size).toBe(1);
  }
  const states = unique.map((r) => verify(hook.secret, r).data.state);
  expect(states.sort()).toEqual(events.map((e) => e.state).sort());

  // The log shows each attempt: the failures, then the success.
  const log = await deliveries(ctx, key, hook.id);
  expect(log.reduce((sum, d) => sum + d.attempts, 0)).toBe(receiver.requests.length);
  const attempts = log.flatMap((d) => d.attempt_log);
  expect(attempts.filter((a) => a.http_status === 500)).toHaveLength(2);
  expect(attempts.filter((a) => a.http_status === 503)).toHaveLength(1);
  const dropped = attempts.filter((a) => a.http_status === undefined);
  expect(dropped).toHaveLength(1);
  expect(dropped[0]!.error).toMatch(/socket|closed|ECONNRESET/i);
  for (const d of log) {
    expect(d.attempt_log.map((a) => a.attempt)).toEqual(d.attempt_log.map((_, i) => i + 1));
    expect(d.attempt_log[d.attempt_log.length - 1]).toMatchObject({ http_status: 200 });
    expect(d).toMatchObject({ last_http_status: 200, last_error: null });
  }
  expect(log.some((d) => d.attempts > 1)).toBe(true);
});

test('the delivery log pages newest first, and another team gets 404 and none of its events', async () => {
  const owner = await ctx.newTeamKey('personal', undefined, 'admin');
  const stranger = await ctx.newTeamKey('personal', undefined, 'admin');
  const { receiver, url } = await startReceiver();
  const hook = await createWebhook(ctx, owner.key, { url });
  const ownRun = await succeededRun(ctx, owner.key);
  const strangerRun = await succeededRun(ctx, stranger.key);
  await receiver.until((r) => r.length >= 3, 'three deliveries');
  await recordLatencies(ctx, owner.key, hook.id, receiver.unique());

  const firstPage = await ctx.api.get(`/api/v1/agent/webhooks/${hook.id}/deliveries?limit=2`).set(auth(owner.key));
  expect(firstPage.status).toBe(200);
  const page1 = firstPage.body as {
    deliveries: Delivery[];
    page_info: { has_next_page: boolean; next_cursor: string };
  };
  expect(page1.deliveries).toHaveLength(2);
  expect(page1.page_info.has_next_page).toBe(true);
  const rest = await ctx.api
    .get(`/api/v1/agent/webhooks/${hook.id}/deliveries`)
    .query({ limit: 2, cursor: page1.page_info.next_cursor })
    .set(auth(owner.key));
  expect(rest.body.page_info).toEqual({ has_next_page: false });
  const ids = [...page1.deliveries, ...(rest.body as { deliveries: Delivery[] }).deliveries].map((d) => d.event_id);
  expect(ids).toEqual((await stateEvents(ctx, ownRun.run_id)).map((e) => e.id).reverse());

  // Bad paging is a 400 that says what to send.
  for (const query of ['?limit=0', '?limit=101', '?cursor=nope', '?sort=asc']) {
    const res = await ctx.api.get(`/api/v1/agent/webhooks/${hook.id}/deliveries${query}`).set(auth(owner.key));
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/`limit`|`cursor`|`sort`/);
  }
  const otherHook = await createWebhook(ctx, owner.key, { url });
  const foreignCursor = await ctx.api
    .get(`/api/v1/agent/webhooks/${otherHook.id}/deliveries`)
    .query({ cursor: page1.page_info.next_cursor })
    .set(auth(owner.key));
  expect(foreignCursor.status).toBe(400);
  expect(JSON.stringify(foreignCursor.body)).toMatch(/another webhook/);

  // Another team: 404 on every route, an empty list, and nothing of its runs in the owner's log.
  for (const [method, path] of [
    ['get', `/api/v1/agent/webhooks/${hook.id}`],
    ['get', `/api/v1/agent/webhooks/${hook.id}/deliveries`],
    ['delete', `/api/v1/agent/webhooks/${hook.id}`],
  ] as const) {
    const res = await ctx.api[method](path).set(auth(stranger.key));
    expect(res.status).toBe(404);
  }
  expect((await ctx.api.get('/api/v1/agent/webhooks').set(auth(stranger.key))).body).toEqual({
    webhooks: [],
    page_info: { has_next_page: false },
  });
  expect((await ctx.api.get(`/api/v1/agent/webhooks/${hook.id}`).set(auth(owner.key))).status).toBe(200);
  const [{ count }] = (await ctx.dataSource.query(
    `SELECT count(*)::int AS count FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.run_id = $1`,
    [strangerRun.run_id],
  )) as [{ count: number }];
  expect(count).toBe(0);
  expect(receiver.unique().map((r) => verify(hook.secret, r).data.run_id)).toEqual(Array(3).fill(ownRun.run_id));
});

test('bad webhooks are 400 and change nothing: private addresses without the allow-list, the platform itself, other schemes, unknown types', async () => {
  const strict = await createTestContext({ worker: false });
  try {
    const { key } = await strict.newTeamKey('personal', undefined, 'admin');
    const post = (c: TestContext, body: object) => c.api.post('/api/v1/agent/webhooks').set(auth(key)).send(body);
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://10.1.2.3/hook',
      'http://[::ffff:192.168.0.1]/hook',
    ]) {
      const res = await post(strict, { url });
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(
        /is not a public address this service may connect to.*OUTBOUND_ALLOWED_PRIVATE_HOSTS/,
      );
      // Nothing of what the name resolved to, or of why, is told.
      expect(res.body.detail).not.toMatch(/loopback|private|link-local|resolve|\(\d/);
    }
    // A name that does not resolve is refused in the same words: no DNS answer shows through.
    const unresolvable = await post(strict, { url: 'http://no-such-host.invalid:8080/hook' });
    expect(unresolvable.body.detail).toBe(
      (await post(strict, { url: 'http://10.1.2.3:8080/hook' })).body.detail.replace(
        '10.1.2.3',
        'no-such-host.invalid',
      ),
    );
    // Allowed private hosts never include the platform's own services (here the API itself).
    const { key: allowedKey } = await ctx.newTeamKey('personal', undefined, 'admin');
    const own = await ctx.api
      .post('/api/v1/agent/webhooks')
      .set(auth(allowedKey))
      .send({ url: `${ctx.baseUrl}/x` });
    expect(own.status).toBe(400);
    // The platform's own services are refused exactly like any other address that is not public.
    const ownUrl = new URL(ctx.baseUrl);
    const other = await post(strict, { url: `http://${ownUrl.hostname}:1/x` });
    expect(own.body.detail).not.toMatch(/platform/);
    expect(own.body.detail.replace(`:${ownUrl.port}`, ':1')).toBe(other.body.detail);

    const cases: [object, RegExp][] = [
      [{ url: 'ftp://example.com/hook' }, /http or https/],
      [{ url: 'not a url' }, /absolute http or https URL/],
      [{ url: 'https://user:pw@example.com/hook' }, /user name or password/],
      [{ url: 'https://example.com/hook', event_types: ['run.created'] }, /unknown event type "run.created"/],
      [{ url: 'https://example.com/hook', event_types: [] }, /at least one event type/],
      [{ url: 'https://example.com/hook', secret: 'whsec_mine' }, /Unknown field `secret`/],
      [{}, /`url` is required/],
    ];
    for (const [body, detail] of cases) {
      const res = await post(strict, body);
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(detail);
    }
    expect((await strict.api.get('/api/v1/agent/webhooks').set(auth(key))).body).toEqual({
      webhooks: [],
      page_info: { has_next_page: false },
    });
    expect((await ctx.api.get('/api/v1/agent/webhooks').set(auth(allowedKey))).body).toEqual({
      webhooks: [],
      page_info: { has_next_page: false },
    });
  } finally {
    await strict.close();
  }
});

test('deleting a webhook stops its deliveries: retries in flight end, later changes record none', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const { receiver, url } = await startReceiver(() => 500);
  const hook = await createWebhook(ctx, key, { url });
  const run = await succeededRun(ctx, key);
  // Every delivery has failed at least twice: they are retrying.
  const log = await waitFor(
    () => deliveries(ctx, key, hook.id),
    (l) => l.length === 3 && l.every((d) => d.status === 'failed' && d.attempts >= 2),
    'retries of all three deliveries',
  );

  expect((await ctx.api.delete(`/api/v1/agent/webhooks/${hook.id}`).set(auth(key))).status).toBe(204);
  expect((await ctx.api.get(`/api/v1/agent/webhooks/${hook.id}`).set(auth(key))).status).toBe(404);
  expect((await ctx.api.get(`/api/v1/agent/webhooks/${hook.id}/deliveries`).set(auth(key))).status).toBe(404);
  expect((await ctx.api.delete(`/api/v1/agent/webhooks/${hook.id}`).set(auth(key))).status).toBe(404);
  // Each delivery workflow finds its delivery gone at its next attempt and ends.
  const results = await Promise.all(
    log.map((d) => ctx.client.workflow.getHandle(webhookDeliveryWorkflowId(d.id)).result()),
  );
  expect(results).toEqual(['gone', 'gone', 'gone']);
  const sent = receiver.requests.length;

  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${run.run_id}/followups`)
    .set(auth(key))
    .send({ message: 'again' });
  expect(followup.status).toBe(200);
  await waitForState(ctx, key, run.run_id, ['SUCCEEDED']);
  expect(await stateEvents(ctx, run.run_id)).toHaveLength(6);
  const [{ count }] = (await ctx.dataSource.query(
    `SELECT count(*)::int AS count FROM webhook_deliveries WHERE webhook_id = $1`,
    [hook.id],
  )) as [{ count: number }];
  expect(count).toBe(0);
  expect(receiver.requests.length).toBe(sent);
});

test('the sweep (a Temporal Schedule of the service) starts a delivery whose workflow was never started', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const { receiver, url } = await startReceiver();
  const hook = await createWebhook(ctx, key, { url });
  const run = await succeededRun(ctx, key);
  await receiver.until((r) => r.length >= 3, 'three deliveries');

  // A delivery recorded while no worker listened (or whose worker died before starting it): a
  // row without a workflow, and no notification.
  const { receiver: late, url: lateUrl } = await startReceiver();
  const lateHook = await createWebhook(ctx, key, { url: lateUrl });
  const [queued] = await stateEvents(ctx, run.run_id);
  const [{ id: deliveryId }] = (await ctx.dataSource.query(
    `INSERT INTO webhook_deliveries (webhook_id, event_id) VALUES ($1, $2) RETURNING id`,
    [lateHook.id, queued!.id],
  )) as [{ id: string }];
  const [row] = (await ctx.dataSource.query(`SELECT workflow_started_at FROM webhook_deliveries WHERE id = $1`, [
    deliveryId,
  ])) as [{ workflow_started_at: Date | null }];
  expect(row.workflow_started_at).toBeNull();

  const schedule = ctx.client.schedule.getHandle(webhookSweepScheduleId(ctx.config.temporal.taskQueue));
  await schedule.trigger();
  await late.until((r) => r.length >= 1, 'the swept delivery');
  expect(late.requests).toHaveLength(1);
  expect(late.requests[0]!.headers['webhook-id']).toBe(deliveryId);
  const payload = verify(lateHook.secret, late.requests[0]!);
  expect(payload.data).toMatchObject({ run_id: run.run_id, state: 'QUEUED' });
  await waitFor(
    () => deliveries(ctx, key, lateHook.id),
    (l) => l[0]?.status === 'succeeded',
    'the swept delivery to be recorded',
  );
  const description = await schedule.describe();
  expect(description.info.recentActions.length).toBeGreaterThanOrEqual(1);
  expect(hook.id).not.toBe(lateHook.id);
});

test('a delivery that gets no 2xx for the retry window is given up, and a redirect is never followed', async () => {
  const short = await createTestContext({
    env: {
      ...RECEIVER_ENV,
      WEBHOOK_RETRY_MAX_INTERVAL_MS: '300',
      WEBHOOK_RETRY_WINDOW_SECONDS: '2',
      WEBHOOK_TIMEOUT_SECONDS: '1',
    },
  });
  try {
    const { receiver: elsewhere, url: elsewhereUrl } = await startReceiver();
    const { receiver, url } = await startReceiver(() => ({ status: 307, redirect: elsewhereUrl }));
    const { key } = await short.newTeamKey('personal', undefined, 'admin');
    const hook = await createWebhook(short, key, { url });
    await succeededRun(short, key);
    const log = await waitFor(
      () => deliveries(short, key, hook.id),
      (l) => l.length === 3 && l.every((d) => d.status === 'given_up'),
      'every delivery to be given up',
    );
    for (const d of log) {
      expect(d.attempts).toBeGreaterThanOrEqual(3);
      expect(d.attempt_log).toHaveLength(d.attempts);
      expect(d.last_http_status).toBe(307);
      expect(d.last_error).toMatch(/redirects are not followed/);
      // Tried for at least the window (2 s) before giving up.
      const first = Date.parse(d.attempt_log[0]!.at);
      expect(Date.parse(d.last_attempt_at!) - first).toBeGreaterThanOrEqual(2000);
      expect(Date.parse(d.finished_at!)).toBeGreaterThanOrEqual(Date.parse(d.last_attempt_at!));
    }
    expect(receiver.requests).toHaveLength(log.reduce((sum, d) => sum + d.attempts, 0));
    expect(elsewhere.requests).toHaveLength(0);
  } finally {
    await short.close();
  }
});
