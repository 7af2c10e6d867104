import type Koa from 'koa';
import supertest from 'supertest';
import { chromium, type Browser } from 'playwright-core';
import { createApp } from '../api/app';
import { openApiDocument, openApiLimits } from '../api/openapi/document';
import { createLogger } from '../core/logger';
import { createTestContext, type TestContext } from './helpers/test-context';

/** The OpenAPI document: it covers every route, is served without a key, and the /docs page renders it offline. */
let ctx: TestContext;
let browser: Browser;
beforeAll(async () => {
  [ctx, browser] = await Promise.all([
    createTestContext({ worker: false, env: { AGENT_MAX_STEPS: '42' } }),
    chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

interface RouteLayer {
  path: string | RegExp;
  methods: string[];
}

/** `METHOD /path/{param}` of every route of every router the app mounts (HEAD comes with GET). */
function appRoutes(app: Koa): string[] {
  const routes = new Set<string>();
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: { stack: RouteLayer[] } }).router;
    for (const layer of router?.stack ?? []) {
      if (typeof layer.path !== 'string') throw new Error(`a route with a RegExp path: ${String(layer.path)}`);
      const path = layer.path.replace(/:(\w+)/g, '{$1}');
      for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${path}`);
    }
  }
  return [...routes].sort();
}

function documentedOperations(document: object): string[] {
  const { paths } = document as { paths?: Record<string, Record<string, unknown>> };
  return Object.entries(paths ?? {})
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

test('every route of the app is an operation of the document, and every operation a route', () => {
  const app = createApp({
    config: ctx.config,
    dataSource: ctx.dataSource,
    temporalClient: ctx.client,
    temporalConnection: ctx.connection,
    logger: createLogger('error', 'test'),
  });
  const routes = appRoutes(app);
  const operations = documentedOperations(openApiDocument(openApiLimits(ctx.config)));
  // The walk found the routers: the API's own routes and the open ones are there.
  expect(routes).toEqual(
    expect.arrayContaining(['POST /api/v1/agent/runs', 'GET /healthz', 'GET /api/v1/openapi.json']),
  );
  expect(routes.filter((r) => !operations.includes(r))).toEqual([]);
  expect(operations.filter((o) => !routes.includes(o))).toEqual([]);
});

test('every operation names its auth, success and error responses, and errors are problem documents', () => {
  const document = openApiDocument(openApiLimits(ctx.config)) as unknown as {
    paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, { $ref?: string }> }>>;
    components: { responses: Record<string, { content: Record<string, unknown> }> };
  };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const label = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(operation.responses);
      // A success: a 2xx, or the 302 of a redirect to a signed download (with its Location).
      expect([label, statuses.some((s) => s.startsWith('2') || s === '302')]).toEqual([label, true]);
      if (statuses.includes('302')) {
        const redirect = operation.responses['302'] as { headers?: Record<string, unknown> };
        expect([label, Object.keys(redirect.headers ?? {})]).toEqual([label, expect.arrayContaining(['Location'])]);
      }
      const open = Array.isArray(operation.security) && operation.security.length === 0;
      expect([label, statuses.includes('401')]).toEqual([label, !open]);
      // /readyz says which check failed; the transcript page answers a browser's bad link with a page.
      const pageOrProbe = (s: string) => path === '/readyz' || (path === '/sessions/{sessionId}' && s === '403');
      for (const status of statuses.filter((s) => Number(s) >= 400 && !pageOrProbe(s))) {
        expect(operation.responses[status]!.$ref).toMatch(/^#\/components\/responses\//);
      }
    }
  }
  for (const response of Object.values(document.components.responses)) {
    expect(Object.keys(response.content)).toEqual(['application/problem+json']);
  }
});

test('GET /api/v1/openapi.json needs no key and states the operator limits', async () => {
  const res = await ctx.api.get('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.openapi).toBe('3.1.0');
  expect(res.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  // AGENT_MAX_STEPS=42 in this context: a run may not ask for more, and the document says so.
  expect(res.body.components.schemas.AgentConfig.properties.max_steps.maximum).toBe(42);
  const tooMany = await ctx.api
    .post('/api/v1/agent/runs')
    .set('Authorization', `Bearer ${(await ctx.newTeamKey()).key}`)
    .send({ prompt: 'x', config: { max_steps: 43 } });
  expect(tooMany.status).toBe(400);
  expect((await ctx.api.get('/api/v1/openapi.json?x=1')).status).toBe(400);
});

test('GET / is a landing page that links the API reference, the OpenAPI document, the Temporal UI and health', async () => {
  const landing = await ctx.api.get('/').set('Accept', 'text/html');
  expect(landing.status).toBe(200);
  expect(landing.headers['content-type']).toMatch(/^text\/html/);
  for (const href of ['/console', '/docs', '/api/v1/openapi.json', '/healthz', '/readyz', '/metrics']) {
    expect(landing.text).toContain(`href="${href}"`);
  }
  // The test stack's Temporal is not embedded by this process: no UI link unless TEMPORAL_UI_URL says where.
  expect(landing.text).not.toContain('Temporal UI');
  const json = await ctx.api.get('/').set('Accept', 'application/json');
  expect(json.body).toMatchObject({ service: 'agent-runs', links: { 'API reference': '/docs' } });

  const withUi = createApp({
    config: { ...ctx.config, temporal: { ...ctx.config.temporal, uiUrl: 'http://temporal-ui.example:8233' } },
    dataSource: ctx.dataSource,
    temporalClient: ctx.client,
    temporalConnection: ctx.connection,
    logger: createLogger('error', 'test'),
  });
  const linked = await supertest(withUi.callback()).get('/');
  expect(linked.text).toContain('<a href="http://temporal-ui.example:8233">Temporal UI</a>');
});

test('GET /readyz says what is served and whether runs are accepted; `require` names checks this process runs', async () => {
  const ready = await ctx.api.get('/readyz');
  expect([ready.status, ready.body]).toEqual([
    200,
    { status: 'ready', accepts_runs: true, checks: { database: 'ok', temporal: 'ok' } },
  ]);
  expect((await ctx.api.get('/readyz?require=temporal,database')).status).toBe(200);
  for (const [query, detail] of [
    ['require=temporl', /require/],
    ['require=worker', /runs no worker to check; it checks database, temporal/],
    ['requires=temporal', /Unknown query parameter/],
  ] as const) {
    const res = await ctx.api.get(`/readyz?${query}`);
    expect([query, res.status, res.body.detail]).toEqual([query, 400, expect.stringMatching(detail)]);
  }
});

test('/docs is served from this origin with its own CSP, and its files from the package', async () => {
  const page = await ctx.api.get('/docs');
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toMatch(/^text\/html/);
  expect(page.headers['content-security-policy']).toContain("script-src 'self'");
  expect(page.headers['content-security-policy']).not.toMatch(/script-src[^;]*unsafe/);
  expect(page.text).not.toMatch(/https?:\/\//);
  const bundle = await ctx.api.get('/docs/swagger-ui-bundle.js');
  expect([bundle.status, bundle.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
  const start = await ctx.api.get('/docs/start.js');
  expect(start.text).toContain('/api/v1/openapi.json');
  const missing = await ctx.api.get('/docs/../package.json');
  expect(missing.status).toBe(404);
  const unknown = await ctx.api.get('/docs/index.html');
  expect([unknown.status, unknown.headers['content-type']]).toEqual([404, 'application/problem+json; charset=utf-8']);
});

test('the API reference renders every operation in a browser, offline, without a CSP violation', async () => {
  const page = await browser.newPage();
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  // Nothing but this service: a request anywhere else (a CDN, a validator) is refused and recorded.
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin === ctx.baseUrl) return route.continue();
    elsewhere.push(url.href);
    return route.abort();
  });
  await page.goto(`${ctx.baseUrl}/docs`);
  await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
  const operations = documentedOperations(openApiDocument(openApiLimits(ctx.config)));
  expect(await page.locator('.opblock').count()).toBe(operations.length);
  expect(await page.locator('.opblock-summary-path[data-path="/api/v1/agent/runs"]').count()).toBe(2);
  expect(await page.locator('.info .title').innerText()).toContain('Agent runs service');
  expect(elsewhere).toEqual([]);
  expect(problems).toEqual([]);
  await page.close();
});
