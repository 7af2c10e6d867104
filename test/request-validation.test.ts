import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Response } from 'supertest';
import { ERROR_REFERENCE_FILE, errorReferenceSections } from '../api/routes/error-reference-routes';
import { escapeHtml } from '../api/html';
import { ALL_ERROR_CODES, ERROR_CODES } from '../core/error-codes';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  error: string;
  error_code: string;
  retryable: boolean;
  trace_id: string;
}

interface Team {
  key: string;
  uid: string;
  team: string;
  teamId: string;
}

let ctx: TestContext;
/** The team whose rows every rejected request must leave alone. */
let main: Team;
/** A run of `main` that has ended (a follow-up would reopen it). */
let doneRunId: string;
/** A run of `main` held INPROGRESS by the scripted model (a cancel would end it). */
let heldRunId: string;
const heldReply = gate<{ text: string }>();
const heldMarker = uniqueName('held');

async function newTeam(kind: 'personal' | 'agent' = 'personal', teamName?: string): Promise<Team> {
  const created = await ctx.newTeamKey(kind, teamName);
  const [row] = (await ctx.dataSource.query(`SELECT team_id FROM api_keys WHERE id = $1`, [created.id])) as {
    team_id: string;
  }[];
  return { key: created.key, uid: created.uid, team: created.team, teamId: row!.team_id };
}

beforeAll(async () => {
  ctx = await createTestContext();
  main = await newTeam();
  const doneMarker = uniqueName('done');
  ctx.model.script(doneMarker, () => ({ text: 'All done.' }));
  doneRunId = await createRun(ctx, main.key, { prompt: `Finish ${doneMarker}` });
  ctx.model.script(heldMarker, () => ({ hold: heldReply.promise }));
  heldRunId = await createRun(ctx, main.key, { prompt: `Keep working ${heldMarker}` });
  await waitForState(ctx, main.key, doneRunId, ['SUCCEEDED']);
  await waitForState(ctx, main.key, heldRunId, ['INPROGRESS']);
  await ctx.model.waitForCalls(heldMarker, 1);
});

afterAll(async () => {
  if (ctx) {
    heldReply.release({ text: 'Finally done.' });
    if (heldRunId) await waitForState(ctx, main.key, heldRunId, ['SUCCEEDED']);
    await ctx.close();
  }
});

/** Everything a request could change for a team: its runs, their follow-ups, its idempotency records. */
async function teamSnapshot(teamId: string) {
  const runs = (await ctx.dataSource.query(
    `SELECT run_id, state, turn, title, prompt, metadata, updated_at, cancel_requested_at
       FROM runs WHERE team_id = $1 ORDER BY run_id`,
    [teamId],
  )) as unknown[];
  const [counts] = (await ctx.dataSource.query(
    `SELECT (SELECT count(*)::int FROM followups f JOIN runs r ON r.run_id = f.run_id WHERE r.team_id = $1) AS followups,
            (SELECT count(*)::int FROM idempotency_records i JOIN principals p ON p.uid = i.principal_uid
              WHERE p.team_id = $1) AS idempotency_records`,
    [teamId],
  )) as { followups: number; idempotency_records: number }[];
  return { runCount: runs.length, ...counts, runs };
}

/** Runs `send` and checks that the team's rows are exactly as before. */
async function unchanged(send: () => Promise<Response>, teamId = main.teamId): Promise<Response> {
  const before = await teamSnapshot(teamId);
  const res = await send();
  expect(await teamSnapshot(teamId)).toEqual(before);
  return res;
}

function expectProblem(res: Response, status: number, errorCode: string, detail?: RegExp): Problem {
  const body = res.body as Problem;
  expect({
    status: res.status,
    contentType: res.headers['content-type'],
    error_code: body.error_code,
    bodyStatus: body.status,
  }).toEqual({
    status,
    contentType: expect.stringMatching(/^application\/problem\+json/),
    error_code: errorCode,
    bodyStatus: status,
  });
  if (detail) expect(body.detail).toMatch(detail);
  return body;
}

const createWith = (body: unknown, key = main.key) =>
  ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send(body as object);

describe('the problem document', () => {
  test('has every member of the wire contract, and trace_id is the echoed x-request-id', async () => {
    const res = await unchanged(() =>
      ctx.api
        .post('/api/v1/agent/runs')
        .set(auth(main.key))
        .set('x-request-id', 'trace-abc-123')
        .send({ prompt: 'hello', colour: 'red' }),
    );
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['x-request-id']).toBe('trace-abc-123');
    expect(res.headers['x-should-retry']).toBe('false');
    const body = res.body as Problem;
    expect(Object.keys(body).sort()).toEqual(
      ['detail', 'error', 'error_code', 'instance', 'retryable', 'status', 'title', 'trace_id', 'type'].sort(),
    );
    expect(body).toEqual({
      type: expect.stringMatching(/^https?:\/\/.+\/invalid_request$/),
      title: ERROR_CODES.invalid_request.title,
      status: 400,
      detail: expect.stringContaining('`colour`'),
      instance: '/api/v1/agent/runs',
      error: expect.any(String),
      error_code: 'invalid_request',
      retryable: false,
      trace_id: 'trace-abc-123',
    });
    expect(body.error).toContain(body.title);
    expect(body.error).toContain(body.detail);
  });

  test('without an x-request-id (or with an unusable one) the service makes one and uses it as trace_id', async () => {
    const res = await ctx.api.get('/api/v1/agent/runs/not-a-run').set(auth(main.key));
    const body = expectProblem(res, 404, 'resource_not_found');
    const generated = res.headers['x-request-id'] as string;
    expect(generated).toMatch(/^\S{8,}$/);
    expect(body.trace_id).toBe(generated);
    expect(body.instance).toBe('/api/v1/agent/runs/not-a-run');

    const tooLong = 'r'.repeat(300);
    const res2 = await ctx.api.get('/api/v1/agent/runs/not-a-run').set(auth(main.key)).set('x-request-id', tooLong);
    expect(res2.headers['x-request-id']).not.toBe(tooLong);
    expect(res2.headers['x-request-id']).not.toBe(generated);
    expect((res2.body as Problem).trace_id).toBe(res2.headers['x-request-id']);
  });

  test('successful responses carry x-request-id too, echoed when sent', async () => {
    const res = await ctx.api.get('/api/v1/agent/runs').set(auth(main.key)).set('x-request-id', 'list-req-1');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('list-req-1');
  });

  test('its `type` URL is served and shows that error code’s section of the error reference', async () => {
    const sections = errorReferenceSections(readFileSync(ERROR_REFERENCE_FILE, 'utf8'));
    const res = await createWith({ prompt: 'x', colour: 'red' });
    const { type } = expectProblem(res, 400, 'invalid_request');
    const page = await ctx.api.get(new URL(type).pathname);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const section = sections.get('invalid_request')!;
    expect(page.text).toContain(escapeHtml(section.split('\n')[0]!));
    // Another code's section is not on this page.
    expect(page.text).not.toContain(escapeHtml(sections.get('rate_limited')!.split('\n')[0]!));
  });

  test('every error code has its own `## code` section in docs/errors.md, served under /errors/{code}', async () => {
    const markdown = readFileSync(path.resolve(__dirname, '..', 'docs', 'errors.md'), 'utf8');
    const headings = [...markdown.matchAll(/^## (\S+)\s*$/gm)].map((m) => m[1]);
    expect([...headings].sort()).toEqual([...ALL_ERROR_CODES].sort());
    const sections = errorReferenceSections(markdown);
    for (const code of ALL_ERROR_CODES) {
      const body = sections.get(code)!;
      expect(body).toMatch(/HTTP status/);
      const page = await ctx.api.get(`/errors/${code}`);
      expect({ code, status: page.status }).toEqual({ code, status: 200 });
      expect(page.text).toContain(`<h1>${code}</h1>`);
      expect(page.text).toContain(escapeHtml(body.split('\n')[0]!));
    }
    expectProblem(await ctx.api.get('/errors/no_such_code'), 404, 'resource_not_found');
  });

  test('an unknown route is a 404 problem document, with or without a key', async () => {
    for (const url of ['/api/v1/nope', '/api/v1/agent/runs/a/b/c', '/nope', '/api/v2/agent/runs']) {
      const withKey = await ctx.api.get(url).set(auth(main.key));
      expect(expectProblem(withKey, 404, 'resource_not_found').instance).toBe(url);
      expectProblem(await ctx.api.get(url), 404, 'resource_not_found');
    }
  });

  test('a method the route lacks is 405 operation_not_supported, with Allow, and changes nothing', async () => {
    const cases: [string, string, string][] = [
      ['delete', '/api/v1/agent/runs', 'GET'],
      ['put', `/api/v1/agent/runs/${heldRunId}`, 'GET'],
      ['get', `/api/v1/agent/runs/${heldRunId}/cancel`, 'POST'],
      ['patch', `/api/v1/agent/runs/${heldRunId}/followups`, 'POST'],
      ['post', '/errors/invalid_request', 'GET'],
    ];
    for (const [method, url, allowed] of cases) {
      const res = await unchanged(() =>
        ctx.api[method as 'get' | 'put' | 'delete' | 'patch'](url).set(auth(main.key)).send({}),
      );
      const body = expectProblem(res, 405, 'operation_not_supported');
      expect(body.detail).toContain(method.toUpperCase());
      expect(res.headers.allow).toContain(allowed);
    }
    expect((await getRun(ctx, main.key, heldRunId)).state).toBe('INPROGRESS');
  });

  test('a method no route knows (TRACE) is 405 with Allow as well, not 501', async () => {
    const res = await ctx.api.trace(`/api/v1/agent/runs/${heldRunId}`).set(auth(main.key));
    expectProblem(res, 405, 'operation_not_supported');
    expect(res.headers.allow).toBe('HEAD, GET, DELETE');
  });

  test('/agent/factories/validate is an action, not a factory: its Allow is POST alone', async () => {
    const url = '/api/v1/agent/factories/validate';
    const options = await ctx.api.options(url).set(auth(main.key));
    expect([options.status, options.headers.allow]).toEqual([200, 'POST']);
    for (const method of ['get', 'put', 'delete', 'patch'] as const) {
      const res = await ctx.api[method](url).set(auth(main.key)).send({});
      expectProblem(res, 405, 'operation_not_supported');
      expect(res.headers.allow).toBe('POST');
    }
  });

  test('an id with NUL in a path is a 404 like any unknown id (PostgreSQL text cannot hold it)', async () => {
    for (const url of [
      '/api/v1/agent/identities/sa_%00x',
      '/api/v1/agent/factories/fac_%00x',
      '/api/v1/agent/factories/fac_%00x/runs',
    ]) {
      const res = url.endsWith('/runs')
        ? await ctx.api.post(url).set(auth(main.key)).send({ prompt: 'x' })
        : await ctx.api.get(url).set(auth(main.key));
      expectProblem(res, 404, 'resource_not_found');
    }
  });
});

describe('request bodies', () => {
  test('a body that is not JSON is 400', async () => {
    for (const raw of ['{not json', '{"prompt": "x",}', "{'prompt': 'x'}", '{"prompt": "x"} trailing']) {
      const res = await unchanged(() =>
        ctx.api.post('/api/v1/agent/runs').set(auth(main.key)).set('Content-Type', 'application/json').send(raw),
      );
      expectProblem(res, 400, 'invalid_request', /not valid JSON/);
    }
  });

  test('JSON that is not an object is 400', async () => {
    for (const raw of ['[1, 2]', '"a prompt"', '42', 'null', 'true']) {
      const res = await unchanged(() =>
        ctx.api.post('/api/v1/agent/runs').set(auth(main.key)).set('Content-Type', 'application/json').send(raw),
      );
      expectProblem(res, 400, 'invalid_request', /JSON object/);
    }
  });

  test('20,000 levels of nesting are a 400 naming the depth limit, not a retryable 500', async () => {
    for (const path of ['/api/v1/agent/runs', '/api/v1/agent/identities']) {
      const deep = `{"prompt":"x","metadata":{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`;
      const res = await unchanged(() =>
        ctx.api.post(path).set(auth(main.key)).set('Content-Type', 'application/json').send(deep),
      );
      expectProblem(res, 400, 'invalid_request', /deeper than 64 levels/);
    }
  });

  test('a body over 1 MiB is 413, and a body of exactly 1 MiB is read', async () => {
    const overhead = JSON.stringify({ prompt: '' }).length;
    const over = JSON.stringify({ prompt: 'a'.repeat(1024 * 1024 - overhead + 1) });
    expect(Buffer.byteLength(over)).toBe(1024 * 1024 + 1);
    const res = await unchanged(() => createWith(over).set('Content-Type', 'application/json'));
    expectProblem(res, 413, 'invalid_request', /1048576 bytes/);

    const exact = JSON.stringify({ prompt: 'a'.repeat(1024 * 1024 - overhead) });
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    const read = await unchanged(() => createWith(exact).set('Content-Type', 'application/json'));
    // Read and parsed: it fails on the prompt limit instead.
    expectProblem(read, 400, 'invalid_request', /`prompt`/);
  });

  test('a chunked body (no Content-Length) over 1 MiB is 413 as well', async () => {
    const before = await teamSnapshot(main.teamId);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        `${ctx.baseUrl}/api/v1/agent/runs`,
        { method: 'POST', headers: { ...auth(main.key), 'Content-Type': 'application/json' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.write('{"prompt":"');
      const chunk = 'b'.repeat(64 * 1024);
      for (let i = 0; i < 17; i++) req.write(chunk);
      req.end('"}');
    });
    expect(status).toBe(413);
    expect(JSON.parse(body)).toMatchObject({ error_code: 'invalid_request', status: 413 });
    expect(await teamSnapshot(main.teamId)).toEqual(before);
  });

  test('a body sent with a non-JSON Content-Type is 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await unchanged(() =>
        ctx.api
          .post('/api/v1/agent/runs')
          .set(auth(main.key))
          .set('Content-Type', type)
          .send(JSON.stringify({ prompt: 'hello' })),
      );
      expectProblem(res, 415, 'invalid_request', /application\/json/);
    }
  });

  const unstorable: [string, string, unknown, RegExp][] = [
    ['NUL in prompt', 'runs', { prompt: 'a\u0000b' }, /`prompt`/],
    ['NUL in title', 'runs', { prompt: 'ok', title: 'a\u0000b' }, /`title`/],
    [
      'NUL in config.base_prompt',
      'runs',
      { prompt: 'ok', config: { base_prompt: 'x\u0000' } },
      /`config\.base_prompt`/,
    ],
    ['NUL in config.name', 'runs', { prompt: 'ok', config: { name: '\u0000' } }, /`config\.name`/],
    ['NUL in conversation_id', 'runs', { prompt: 'ok', conversation_id: 'c\u0000' }, /`conversation_id`/],
    [
      'NUL in an MCP env key',
      'runs',
      { prompt: 'ok', config: { mcp_servers: { x: { command: 'npx', env: { 'A\u0000': 'b' } } } } },
      /config\.mcp_servers\.x\.env/,
    ],
    // Unpaired UTF-16 surrogates: jsonb rejects them, and text would silently store U+FFFD instead.
    ['an unpaired surrogate in config.name', 'runs', { prompt: 'ok', config: { name: 'n\ud800' } }, /`config\.name`/],
    ['an unpaired surrogate in a metadata value', 'runs', { prompt: 'ok', metadata: { k: '\udc00' } }, /`metadata\.k`/],
    ['an unpaired surrogate in prompt', 'runs', { prompt: 'ok \ud83d' }, /`prompt`/],
    ['NUL in a follow-up message', 'followups', { message: 'm\u0000' }, /`message`/],
  ];

  test.each(unstorable)(
    '%s (which PostgreSQL cannot store) is a 400 naming the field, never a 500',
    async (_name, endpoint, body, detail) => {
      const url = endpoint === 'runs' ? '/api/v1/agent/runs' : `/api/v1/agent/runs/${doneRunId}/followups`;
      const res = await unchanged(() =>
        ctx.api
          .post(url)
          .set(auth(main.key))
          .send(body as object),
      );
      expectProblem(res, 400, 'invalid_request', detail);
    },
  );
});

describe('creating a run', () => {
  const bad: [string, unknown, RegExp][] = [
    ['an unknown top-level field', { prompt: 'x', colour: 'red' }, /`colour`/],
    ['an unknown config field', { prompt: 'x', config: { foo: 1 } }, /`config\.foo`/],
    [
      'an unknown MCP server field',
      { prompt: 'x', config: { mcp_servers: { x: { command: 'npx', bar: 1 } } } },
      /`config\.mcp_servers\.x\.bar`/,
    ],
    ['no prompt and no skill', {}, /`prompt`/],
    ['an empty prompt', { prompt: '' }, /`prompt`/],
    ['a blank prompt', { prompt: '  \n\t ' }, /`prompt`/],
    ['a prompt that is not a string', { prompt: 42 }, /`prompt`/],
    ['a prompt over 100,000 characters', { prompt: 'p'.repeat(100_001) }, /`prompt`.*100000/],
    ['a title over 200 characters', { prompt: 'x', title: 't'.repeat(201) }, /`title`.*200/],
    ['config that is not an object', { prompt: 'x', config: 'fast' }, /`config`/],
    ['`skill` of one word', { skill: 'nope' }, /`skill`/],
    ['`skill` without a skill name', { skill: 'owner/repo' }, /`skill`/],
    ['`skill` with an empty skill name', { skill: 'owner/repo:' }, /`skill`/],
    ['`skill` with a path not ending in SKILL.md', { skill: 'owner/repo:path/to/README.md' }, /`skill`/],
    ['`config.skill_spec` of one word', { config: { skill_spec: 'nope' } }, /`config\.skill_spec`/],
    ['`config.skill_spec` without a skill name', { config: { skill_spec: 'owner/repo' } }, /`config\.skill_spec`/],
    ['`config.skill_spec` with an empty skill name', { config: { skill_spec: 'owner/repo:' } }, /`config\.skill_spec`/],
    ['`skill` whose owner is `..`', { skill: '../repo:deploy' }, /`skill`/],
    ['`config.skill_spec` whose repo is `.`', { config: { skill_spec: 'owner/.:deploy' } }, /`config\.skill_spec`/],
    [
      'more than 20 metadata keys',
      { prompt: 'x', metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) },
      /`metadata`.*20/,
    ],
    ['a metadata key with a space', { prompt: 'x', metadata: { 'bad key': 'v' } }, /metadata.*\[a-zA-Z0-9\._-\]/],
    ['a metadata key with a slash', { prompt: 'x', metadata: { 'a/b': 'v' } }, /metadata/],
    ['a metadata key over 64 characters', { prompt: 'x', metadata: { ['k'.repeat(65)]: 'v' } }, /metadata/],
    ['an empty metadata key', { prompt: 'x', metadata: { '': 'v' } }, /metadata/],
    // 129 characters but 258 bytes: the limit is in bytes.
    ['a metadata value over 256 bytes', { prompt: 'x', metadata: { k: 'é'.repeat(129) } }, /metadata\.k.*256 bytes/],
    ['a metadata value with NUL', { prompt: 'x', metadata: { k: 'a\u0000b' } }, /metadata\.k.*NUL/],
    ['a metadata value that is not a string', { prompt: 'x', metadata: { k: 5 } }, /metadata\.k/],
    ['metadata that is an array', { prompt: 'x', metadata: ['a'] }, /`metadata`/],
    [
      'an MCP server with both command and url',
      { prompt: 'x', config: { mcp_servers: { x: { command: 'npx', url: 'https://mcp.example.com' } } } },
      /config\.mcp_servers\.x.*exactly one/,
    ],
    [
      'an MCP server with neither command nor url',
      { prompt: 'x', config: { mcp_servers: { x: { args: ['a'] } } } },
      /config\.mcp_servers\.x.*exactly one/,
    ],
    ['`config.model_id` without a provider', { prompt: 'x', config: { model_id: 'gpt-4o' } }, /`config\.model_id`/],
    ['an empty `config.model_id`', { prompt: 'x', config: { model_id: '' } }, /`config\.model_id`/],
    ['`config.model_id` with a space', { prompt: 'x', config: { model_id: 'openai/gpt 4o' } }, /`config\.model_id`/],
    [
      'a `config.model_id` this service does not serve',
      { prompt: 'x', config: { model_id: 'openai/gpt-9-ultra' } },
      /^`config\.model_id`: this service does not serve the model "openai\/gpt-9-ultra"; it serves .*`openai\/gpt-4o`.*`openai\/test-model`.*GET \/api\/v1\/agent\/models/,
    ],
    ['a misspelt field', { promt: 'x' }, /^Unknown field `promt` \(did you mean `prompt`\?\)\./],
    [
      'a misspelt config field',
      { prompt: 'x', config: { modelId: 'x' } },
      /`config\.modelId` \(did you mean `config\.model_id`\?\)/,
    ],
    [
      'a negative idle_timeout_minutes',
      { prompt: 'x', config: { idle_timeout_minutes: -1 } },
      /`config\.idle_timeout_minutes`/,
    ],
    [
      'idle_timeout_minutes over 1440',
      { prompt: 'x', config: { idle_timeout_minutes: 1441 } },
      /`config\.idle_timeout_minutes`/,
    ],
    [
      'a fractional idle_timeout_minutes',
      { prompt: 'x', config: { idle_timeout_minutes: 2.5 } },
      /`config\.idle_timeout_minutes`/,
    ],
    [
      'idle_timeout_minutes as a string',
      { prompt: 'x', config: { idle_timeout_minutes: '10' } },
      /`config\.idle_timeout_minutes`/,
    ],
  ];

  test.each(bad)('%s is 400 naming the field, and creates nothing', async (_name, body, detail) => {
    const res = await unchanged(() => createWith(body));
    expectProblem(res, 400, 'invalid_request', detail);
  });

  test('the older POST /agent/run validates the same way', async () => {
    const res = await unchanged(() =>
      ctx.api
        .post('/api/v1/agent/run')
        .set(auth(main.key))
        .send({ prompt: 'x', config: { foo: 1 } }),
    );
    expectProblem(res, 400, 'invalid_request', /`config\.foo`/);
  });

  test('values at every limit, and a skill instead of a prompt, are accepted', async () => {
    const ok = await newTeam();
    const marker = uniqueName('limits');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const accepted: Record<string, unknown>[] = [
      { skill: 'owner/repo:skill-name' },
      { prompt: '', skill: 'my-org/my.repo:path/to/SKILL.md' },
      { config: { skill_spec: 'owner/repo:path/to/SKILL.md' } },
      { prompt: `${marker} ${'p'.repeat(100_000 - marker.length - 1)}`, title: 't'.repeat(200) },
      {
        prompt: `meta ${marker}`,
        metadata: Object.fromEntries(
          Array.from({ length: 20 }, (_, i) => [`${String(i).padStart(2, '0')}${'k'.repeat(62)}`, 'é'.repeat(128)]),
        ),
      },
      { prompt: `zero ${marker}`, config: { idle_timeout_minutes: 0, model_id: 'openai/test-model' } },
      // A surrogate pair is a well-formed character, unlike an unpaired surrogate.
      { prompt: `emoji 🚀 ${marker}`, title: '🚀 launch', metadata: { e: '🚀' }, config: { name: 'rocket 🚀' } },
      {
        prompt: `max ${marker}`,
        config: {
          idle_timeout_minutes: 1440,
          mcp_servers: {
            local: { command: 'npx', args: ['server'], env: { A: 'b' } },
            remote: { url: 'https://mcp.example.com/sse', headers: { Authorization: 'x' } },
          },
        },
      },
    ];
    for (const body of accepted) {
      const res = await createWith(body, ok.key);
      expect({ body: JSON.stringify(body).slice(0, 120), status: res.status }).toEqual({
        body: JSON.stringify(body).slice(0, 120),
        status: 201,
      });
    }
    const [{ n }] = (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM runs WHERE team_id = $1`, [
      ok.teamId,
    ])) as [{ n: number }];
    expect(n).toBe(accepted.length);
    const [skillRun] = (await ctx.dataSource.query(
      `SELECT prompt, title, skill_spec FROM runs WHERE team_id = $1 ORDER BY run_id LIMIT 1`,
      [ok.teamId],
    )) as { prompt: string; title: string; skill_spec: string }[];
    expect(skillRun).toEqual({
      prompt: '',
      title: expect.stringContaining('owner/repo:skill-name'),
      skill_spec: 'owner/repo:skill-name',
    });
  });

  test('agent_identity_uid must name an agent of the caller’s team: another team’s is 404 and creates nothing', async () => {
    const otherAgent = await newTeam('agent');
    const fromPersonal = await unchanged(() => createWith({ prompt: 'x', agent_identity_uid: otherAgent.uid }));
    expectProblem(fromPersonal, 404, 'resource_not_found', /agent_identity_uid/);
    const agent = await newTeam('agent', main.team);
    const fromAgent = await unchanged(() => createWith({ prompt: 'x', agent_identity_uid: otherAgent.uid }, agent.key));
    expectProblem(fromAgent, 404, 'resource_not_found', new RegExp(otherAgent.uid));
  });
});

describe('a model this service does not serve', () => {
  const unserved =
    /this service does not serve the model "openai\/gpt-9-ultra"; it serves .*GET \/api\/v1\/agent\/models/;

  test('is 400 naming the field for an agent, a schedule and a factory file, and creates nothing', async () => {
    const identity = await unchanged(() =>
      ctx.api
        .post('/api/v1/agent/identities')
        .set(auth(main.key))
        .send({ name: uniqueName('agent'), base_model: 'openai/gpt-9-ultra' }),
    );
    expectProblem(identity, 400, 'invalid_request', new RegExp(`^\`base_model\`: ${unserved.source}`));
    const schedule = await unchanged(() =>
      ctx.api
        .post('/api/v1/agent/schedules')
        .set(auth(main.key))
        .send({
          name: uniqueName('schedule'),
          cron_schedule: '0 9 * * *',
          prompt: 'x',
          agent_config: { model_id: 'openai/gpt-9-ultra' },
        }),
    );
    expectProblem(schedule, 400, 'invalid_request', new RegExp(`^\`agent_config\.model_id\`: ${unserved.source}`));
    const factory = await ctx.api
      .post('/api/v1/agent/factories/validate')
      .set(auth(main.key))
      .send({
        path: '.agents/factories/team/FACTORY.md',
        content: [
          '---',
          'name: team',
          'description: A team',
          'agents:',
          '  - name: lead',
          '    agent_type: FOREMAN',
          '    description: Leads',
          '    base_model: openai/gpt-9-ultra',
          '---',
          '',
          'Body.',
          '',
        ].join('\n'),
      });
    expect(factory.status).toBe(200);
    expect(factory.body).toEqual({
      valid: false,
      errors: [{ path: 'agents[0].base_model', message: expect.stringMatching(unserved) }],
    });
  });

  test('a served one is accepted', async () => {
    const res = await ctx.api
      .post('/api/v1/agent/identities')
      .set(auth(main.key))
      .send({ name: uniqueName('agent'), base_model: 'openai/gpt-4o' });
    expect(res.status).toBe(201);
  });
});

describe('query parameters on the other endpoints', () => {
  test('an unknown query parameter is 400 naming it on create, GET, follow-ups and cancel', async () => {
    const cases: [string, () => Promise<Response>][] = [
      ['create', () => ctx.api.post('/api/v1/agent/runs?colour=red').set(auth(main.key)).send({ prompt: 'hello' })],
      [
        'create (older path)',
        () => ctx.api.post('/api/v1/agent/run?colour=red').set(auth(main.key)).send({ prompt: 'hi' }),
      ],
      ['get', () => ctx.api.get(`/api/v1/agent/runs/${heldRunId}?colour=red`).set(auth(main.key))],
      [
        'follow-up',
        () =>
          ctx.api
            .post(`/api/v1/agent/runs/${doneRunId}/followups?colour=red`)
            .set(auth(main.key))
            .send({ message: 'hi' }),
      ],
      ['cancel', () => ctx.api.post(`/api/v1/agent/runs/${heldRunId}/cancel?colour=red`).set(auth(main.key))],
    ];
    for (const [name, send] of cases) {
      const res = await unchanged(send);
      expect({ name, status: res.status }).toEqual({ name, status: 400 });
      expectProblem(res, 400, 'invalid_request', /`colour`/);
    }
    expect((await getRun(ctx, main.key, heldRunId)).state).toBe('INPROGRESS');
  });
});

describe('follow-ups', () => {
  const bad: [string, unknown, RegExp][] = [
    ['no message', {}, /`message`/],
    ['an empty message', { message: '' }, /`message`/],
    ['a message that is not a string', { message: ['a'] }, /`message`/],
    ['a message over 100,000 characters', { message: 'm'.repeat(100_001) }, /`message`.*100000/],
    ['an unknown mode', { message: 'go on', mode: 'fast' }, /`mode`/],
    ['an unknown field', { message: 'go on', urgent: true }, /`urgent`/],
  ];

  test.each(bad)('%s is 400 and neither records a follow-up nor reopens the run', async (_name, body, detail) => {
    const res = await unchanged(() =>
      ctx.api
        .post(`/api/v1/agent/runs/${doneRunId}/followups`)
        .set(auth(main.key))
        .send(body as object),
    );
    expectProblem(res, 400, 'invalid_request', detail);
  });

  test('a bad follow-up to a running run is rejected the same way', async () => {
    const res = await unchanged(() =>
      ctx.api
        .post(`/api/v1/agent/runs/${heldRunId}/followups`)
        .set(auth(main.key))
        .send({ message: 'x', mode: 'NORMAL' }),
    );
    expectProblem(res, 400, 'invalid_request', /`mode`/);
  });
});

describe('cancel', () => {
  test('an unknown body field is 400 and does not cancel the run', async () => {
    const res = await unchanged(() =>
      ctx.api.post(`/api/v1/agent/runs/${heldRunId}/cancel`).set(auth(main.key)).send({ reason: 'stop' }),
    );
    expectProblem(res, 400, 'invalid_request', /`reason`/);
    const run = await getRun(ctx, main.key, heldRunId);
    expect(run.state).toBe('INPROGRESS');
    expect(run.is_run_type_cancellable).toBe(true);
  });
});

describe('a run id of the wrong shape, or of no run, is 404', () => {
  const ids = [
    'not-a-run',
    '123',
    'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz',
    '01a20148-bbe3-7f9b-a00a-640e2b639bda',
    "1' OR '1'='1",
  ];

  test.each(ids)('%s on GET, follow-ups and cancel', async (id) => {
    const encoded = encodeURIComponent(id);
    const get = await ctx.api.get(`/api/v1/agent/runs/${encoded}`).set(auth(main.key));
    expectProblem(get, 404, 'resource_not_found');
    const followup = await unchanged(() =>
      ctx.api.post(`/api/v1/agent/runs/${encoded}/followups`).set(auth(main.key)).send({ message: 'hi' }),
    );
    expectProblem(followup, 404, 'resource_not_found');
    const cancel = await unchanged(() => ctx.api.post(`/api/v1/agent/runs/${encoded}/cancel`).set(auth(main.key)));
    expectProblem(cancel, 404, 'resource_not_found');
  });
});

describe('listing runs', () => {
  const b64 = (value: string) => Buffer.from(value).toString('base64url');
  const bad: [string, RegExp][] = [
    ['foo=1', /`foo`/],
    ['statuses=QUEUED', /`statuses`/],
    ['limit=0', /`limit`/],
    ['limit=101', /`limit`/],
    ['limit=abc', /`limit`/],
    ['limit=1.5', /`limit`/],
    ['limit=-1', /`limit`/],
    ['limit=', /`limit`/],
    ['state=RUNNING', /`state`.*RUNNING/],
    ['state=QUEUED&state=nope', /`state`.*nope/],
    ['source=EMAIL', /`source`/],
    ['created_after=2026-01-01', /`created_after`.*RFC 3339/],
    ['created_after=yesterday', /`created_after`/],
    ['created_before=2026-13-01T00:00:00Z', /`created_before`/],
    ['created_before=2026-02-30T00:00:00Z', /`created_before`/],
    ['updated_after=2026-01-01T24:00:00Z', /`updated_after`/],
    ['updated_after=1767225600', /`updated_after`/],
    ['sort_by=name', /`sort_by`/],
    ['sort_order=up', /`sort_order`/],
    ['cursor=garbage', /`cursor`/],
    [`cursor=${b64('null')}`, /`cursor`/],
    [`cursor=${b64('{"v":1}')}`, /`cursor`/],
    [`cursor=${b64('[]')}`, /`cursor`/],
    ['limit=5&limit=6', /`limit`.*once/],
    ['name=a&name=b', /`name`.*once/],
    ['sort_by=title&sort_by=created_at', /`sort_by`.*once/],
    ['metadata[bad key]=x', /metadata/],
    [Array.from({ length: 6 }, (_, i) => `metadata[k${i}]=v`).join('&'), /5/],
    ['name=%00', /`name`/],
    ['q=a%00b', /`q`/],
  ];

  test.each(bad)('?%s is 400 naming the parameter', async (query, detail) => {
    const res = await unchanged(() => ctx.api.get(`/api/v1/agent/runs?${query}`).set(auth(main.key)));
    expectProblem(res, 400, 'invalid_request', detail);
  });

  test('a cursor used with other filters or another sort is 400; with the same filters it pages on', async () => {
    const first = await ctx.api.get('/api/v1/agent/runs?limit=1&sort_by=created_at').set(auth(main.key));
    expect(first.status).toBe(200);
    const page = first.body as {
      runs: { run_id: string }[];
      page_info: { has_next_page: boolean; next_cursor: string };
    };
    expect(page.page_info.has_next_page).toBe(true);
    const cursor = encodeURIComponent(page.page_info.next_cursor);

    for (const other of ['state=SUCCEEDED', 'sort_order=asc', 'q=Finish', 'name=x', 'metadata[a]=b']) {
      const res = await ctx.api
        .get(`/api/v1/agent/runs?limit=1&sort_by=created_at&${other}&cursor=${cursor}`)
        .set(auth(main.key));
      expectProblem(res, 400, 'invalid_request', /`cursor`.*other filters/);
    }
    const res = await ctx.api.get(`/api/v1/agent/runs?limit=1&cursor=${cursor}`).set(auth(main.key));
    expectProblem(res, 400, 'invalid_request', /`cursor`/);

    const next = await ctx.api
      .get(`/api/v1/agent/runs?limit=5&sort_by=created_at&cursor=${cursor}`)
      .set(auth(main.key));
    expect(next.status).toBe(200);
    const nextIds = (next.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id);
    expect(nextIds).toEqual([doneRunId]);
    expect(page.runs.map((r) => r.run_id)).toEqual([heldRunId]);
  });

  test('a tampered cursor is 400, never a 500', async () => {
    const first = await ctx.api.get('/api/v1/agent/runs?limit=1').set(auth(main.key));
    const real = JSON.parse(
      Buffer.from((first.body as { page_info: { next_cursor: string } }).page_info.next_cursor, 'base64url').toString(),
    ) as { v: string; id: string; f: string };
    for (const tampered of [
      { ...real, v: 'not a time' },
      { ...real, id: '------------------------------------' },
      { ...real, id: 'ffffffff-ffff-ffff-ffff-fffffffffffg' },
    ]) {
      const res = await ctx.api
        .get(`/api/v1/agent/runs?limit=1&cursor=${b64(JSON.stringify(tampered))}`)
        .set(auth(main.key));
      expectProblem(res, 400, 'invalid_request', /`cursor`/);
    }
  });

  test('state may repeat, and the client-only states are accepted', async () => {
    const res = await ctx.api
      .get('/api/v1/agent/runs?state=SUCCEEDED&state=INPROGRESS&state=PENDING&limit=100')
      .set(auth(main.key));
    expect(res.status).toBe(200);
    const ids = (res.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id).sort();
    expect(ids).toEqual([doneRunId, heldRunId].sort());
  });
});

describe('ids that cannot be stored', () => {
  test('a follow-up to a run id with a NUL byte, with an Idempotency-Key, is 404', async () => {
    const { key } = await ctx.newTeamKey();
    const res = await ctx.api
      .post('/api/v1/agent/runs/%00/followups')
      .set({ Authorization: `Bearer ${key}`, 'Idempotency-Key': 'k1' })
      .send({ message: 'hi' });
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('resource_not_found');
  });

  test('a conversation id with a NUL byte is 404', async () => {
    const { key } = await ctx.newTeamKey();
    const res = await ctx.api.get('/api/v1/agent/conversations/%00').set({ Authorization: `Bearer ${key}` });
    expect(res.status).toBe(404);
  });

  test('unknown query parameters on the environment and conversation routes are 400', async () => {
    const { key } = await ctx.newTeamKey();
    const headers = { Authorization: `Bearer ${key}` };
    const created = await ctx.api
      .post('/api/v1/agent/environments?x=1')
      .set(headers)
      .send({ config: { name: 'e' } });
    expect(created.status).toBe(400);
    expect(created.body.detail).toContain('`x`');
    const env = await ctx.api
      .post('/api/v1/agent/environments')
      .set(headers)
      .send({ config: { name: 'e' } });
    for (const res of [
      await ctx.api.get(`/api/v1/agent/environments/${env.body.uid}?x=1`).set(headers),
      await ctx.api.delete(`/api/v1/agent/environments/${env.body.uid}?x=1`).set(headers),
      await ctx.api.get(`/api/v1/agent/conversations/01a20148-bbe3-7f9b-a00a-640e2b639bda?x=1`).set(headers),
    ]) {
      expect(res.status).toBe(400);
    }
  });
});
