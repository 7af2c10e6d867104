import type { Response } from 'superagent';
import { openApiDocument, openApiLimits } from '../api/openapi/document';
import { auth } from './helpers/runs';
import { createTestContext, type TestContext } from './helpers/test-context';
import { rateLimitRejections } from '../core/metrics';

/**
 * RATE_LIMIT_REQUESTS_PER_MINUTE: two API instances, each with its own DataSource, on the one
 * PostgreSQL of the test run, as two replicas behind a load balancer would be.
 */
const LIMIT = 10;
let one: TestContext;
let two: TestContext;

beforeAll(async () => {
  const env = { RATE_LIMIT_REQUESTS_PER_MINUTE: String(LIMIT) };
  one = await createTestContext({ worker: false, env });
  two = await createTestContext({ worker: false, env });
});
afterAll(async () => {
  await one?.close();
  await two?.close();
});

const listRuns = (c: TestContext, key: string) => c.api.get('/api/v1/agent/runs').set(auth(key));

/** `r` and `t` of the RateLimit field (`"api-key";r=3;t=42`). */
async function rejections(limit: string): Promise<number> {
  const { values } = await rateLimitRejections.get();
  return values.find((v) => v.labels.limit === limit)?.value ?? 0;
}

function rateLimit(res: Response): { remaining: number; reset: number } {
  const match = /^"api-key";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit));
  if (!match) throw new Error(`no RateLimit field: ${JSON.stringify(res.headers)}`);
  return { remaining: Number(match[1]), reset: Number(match[2]) };
}

test('a burst from one key gets 429 with Retry-After and RateLimit across two API instances; another key is unaffected', async () => {
  const { key } = await one.newTeamKey();
  const { key: otherKey } = await two.newTeamKey();

  // Alternating instances: one count, kept in PostgreSQL.
  const allowed: Response[] = [];
  for (let i = 0; i < LIMIT; i++) allowed.push(await listRuns(i % 2 ? two : one, key));
  expect(allowed.map((r) => r.status)).toEqual(Array(LIMIT).fill(200));
  expect(allowed.map((r) => rateLimit(r).remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  for (const r of allowed) {
    expect(r.headers['ratelimit-policy']).toBe(`"api-key";q=${LIMIT};w=60`);
    expect(rateLimit(r).reset).toBeGreaterThanOrEqual(1);
    expect(rateLimit(r).reset).toBeLessThanOrEqual(60);
  }

  const rejectedBefore = await rejections('request_rate');
  for (const instance of [one, two]) {
    const refused = await listRuns(instance, key);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ error_code: 'rate_limited', status: 429, retryable: true });
    expect(refused.body.detail).toContain('RATE_LIMIT_REQUESTS_PER_MINUTE');
    expect(refused.headers['x-should-retry']).toBe('true');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(rateLimit(refused)).toEqual({ remaining: 0, reset: retryAfter });
    expect(refused.headers['ratelimit-policy']).toBe(`"api-key";q=${LIMIT};w=60`);
  }
  // Both instances run in this process: one registry counts both refusals.
  expect((await rejections('request_rate')) - rejectedBefore).toBe(2);

  // Another key (of another team) has its own count, on either instance.
  const other = [await listRuns(one, otherKey), await listRuns(two, otherKey)];
  expect(other.map((r) => r.status)).toEqual([200, 200]);
  expect(other.map((r) => rateLimit(r).remaining)).toEqual([LIMIT - 1, LIMIT - 2]);

  // Counted by key id, never by the key itself.
  const stored = (await one.dataSource.query(`SELECT key FROM rate_limits WHERE key LIKE 'api-key:%'`)) as {
    key: string;
  }[];
  expect(stored.length).toBeGreaterThanOrEqual(2);
  expect(stored.some((s) => s.key.includes(key) || s.key.includes(otherKey))).toBe(false);
});

test('requests without a valid key are not counted and carry no RateLimit fields', async () => {
  const res = await one.api.get('/api/v1/agent/runs');
  expect(res.status).toBe(401);
  expect(res.headers.ratelimit).toBeUndefined();
  // Open routes are not limited either.
  const open = await one.api.get('/api/v1/openapi.json');
  expect(open.status).toBe(200);
  expect(open.headers.ratelimit).toBeUndefined();
});

test('while PostgreSQL cannot keep the count, each instance counts on its own (in-memory insurance)', async () => {
  const { key } = await one.newTeamKey();
  await one.dataSource.query(`ALTER TABLE rate_limits RENAME TO rate_limits_away`);
  try {
    const first = [];
    for (let i = 0; i < LIMIT; i++) first.push((await listRuns(one, key)).status);
    const second = [];
    for (let i = 0; i < LIMIT; i++) second.push((await listRuns(two, key)).status);
    // 2 × LIMIT answered: the instances no longer share a count, but each still limits.
    expect([...first, ...second]).toEqual(Array(2 * LIMIT).fill(200));
    const refused = await listRuns(one, key);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
  } finally {
    await one.dataSource.query(`ALTER TABLE rate_limits_away RENAME TO rate_limits`);
  }
  // Back to the shared count: this key's PostgreSQL count starts afresh.
  const res = await listRuns(two, key);
  expect(res.status).toBe(200);
  expect(rateLimit(res).remaining).toBe(LIMIT - 1);
});

test('the OpenAPI document declares 429 and the RateLimit fields on the authenticated operations', () => {
  const document = openApiDocument(openApiLimits(one.config)) as unknown as {
    paths: Record<string, Record<string, { responses: Record<string, { $ref?: string; headers?: object }> }>>;
    components: { responses: Record<string, { headers: Record<string, unknown> }> };
  };
  const create = document.paths['/api/v1/agent/runs']!.post!;
  expect(create.responses['429']).toEqual({ $ref: '#/components/responses/TooManyRequests' });
  expect(Object.keys(create.responses['201']!.headers!)).toEqual(
    expect.arrayContaining(['RateLimit', 'RateLimit-Policy']),
  );
  expect(Object.keys(document.components.responses.TooManyRequests!.headers)).toEqual(
    expect.arrayContaining(['Retry-After', 'RateLimit', 'RateLimit-Policy']),
  );
  const health = document.paths['/healthz']!.get!;
  expect(health.responses['429']).toBeUndefined();
});
