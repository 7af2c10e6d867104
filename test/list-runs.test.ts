import { createEnvironment } from './helpers/environments';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * GET /api/v1/agent/runs against the real stack. Runs in QUEUED come from `idle` (an API whose
 * task queue nobody polls); runs that progress come from `ctx` (with a worker).
 */
let ctx: TestContext;
let idle: TestContext;
beforeAll(async () => {
  [ctx, idle] = await Promise.all([createTestContext(), createTestContext({ worker: false })]);
});
afterAll(async () => {
  await Promise.all([ctx?.close(), idle?.close()]);
});

interface Item {
  run_id: string;
  task_id: string;
  title: string;
  prompt: string;
  state: string;
  created_at: string;
  updated_at: string;
  creator: { uid: string; display_name: string; type: string };
  source: string;
  metadata: Record<string, string>;
  agent_config: Record<string, unknown>;
  [member: string]: unknown;
}
interface Page {
  runs: Item[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}
type Params = [string, string][];

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PATH = '/api/v1/agent/runs';

const url = (params: Params) => (params.length ? `${PATH}?${new URLSearchParams(params).toString()}` : PATH);

async function list(key: string, params: Params = []): Promise<Page> {
  const res = await ctx.api.get(url(params)).set(auth(key));
  if (res.status !== 200) throw new Error(`list ${url(params)} failed: ${res.status} ${JSON.stringify(res.body)}`);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return res.body as Page;
}

const ids = (page: Page) => page.runs.map((r) => r.run_id);
const listIds = async (key: string, params: Params = []) => ids(await list(key, [...params, ['limit', '100']]));
const sorted = (values: string[]) => [...values].sort();

/** The request is refused with 400 invalid_request (never a 500), and the detail names `mention`. */
async function expectInvalid(key: string, params: Params, mention: string): Promise<void> {
  const res = await ctx.api.get(url(params)).set(auth(key));
  if (res.status !== 400) throw new Error(`expected 400 for ${url(params)}, got ${res.status} ${res.text}`);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 400, error_code: 'invalid_request', retryable: false });
  expect((res.body as { detail: string }).detail).toContain(mention);
}

/** Follows `next_cursor` to the end; `between` runs after every page that has a next one. */
async function walk(
  key: string,
  params: Params,
  between?: (pageIndex: number, page: Page) => Promise<void>,
): Promise<{ pages: Page[]; ids: string[] }> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await list(key, cursor ? [...params, ['cursor', cursor]] : params);
    pages.push(page);
    if (!page.page_info.has_next_page) {
      expect(page.page_info).not.toHaveProperty('next_cursor');
      break;
    }
    expect(page.page_info.next_cursor).toEqual(expect.any(String));
    cursor = page.page_info.next_cursor;
    if (pages.length > 50) throw new Error('pagination does not end');
    await between?.(pages.length - 1, page);
  }
  return { pages, ids: pages.flatMap(ids) };
}

/** Waits until the wall clock has passed `iso`, so the next run gets a later timestamp. */
async function after(iso: string): Promise<void> {
  await waitFor(
    async () => Date.now(),
    (now) => now > Date.parse(iso) + 1,
    `the clock to pass ${iso}`,
  );
}

/** Creates runs one after another, each with a strictly later `created_at`. */
async function createInSequence(c: TestContext, key: string, bodies: Record<string, unknown>[]): Promise<Item[]> {
  const items: Item[] = [];
  for (const body of bodies) {
    if (items.length) await after(items[items.length - 1]!.created_at);
    items.push((await getRun(c, key, await createRun(c, key, body))) as unknown as Item);
  }
  return items;
}

const followup = async (key: string, runId: string) => {
  const res = await ctx.api.post(`${PATH}/${runId}/followups`).set(auth(key)).send({ message: 'once more' });
  expect(res.status).toBe(200);
};

async function waitForCount(key: string, params: Params, count: number): Promise<void> {
  await waitFor(
    () => listIds(key, params),
    (found) => found.length === count,
    `${count} runs matching ${url(params)}`,
    60_000,
  );
}

/** Checks that `items` are in (key, run_id) order in `order`, ties broken by run_id the same way. */
function expectKeysetOrder(items: Item[], key: 'created_at' | 'updated_at' | 'title', order: 'asc' | 'desc'): void {
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  for (let i = 1; i < items.length; i++) {
    const [prev, cur] = [items[i - 1]!, items[i]!];
    const byKey = key === 'title' ? cmp(prev.title, cur.title) : Date.parse(prev[key]) - Date.parse(cur[key]);
    const c = byKey !== 0 ? byKey : cmp(prev.run_id, cur.run_id);
    if (order === 'asc') expect(c).toBeLessThan(0);
    else expect(c).toBeGreaterThan(0);
  }
}

function forge(cursor: string, change: Record<string, unknown>): string {
  const payload = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
  return Buffer.from(JSON.stringify({ ...payload, ...change })).toString('base64url');
}
const b64 = (text: string) => Buffer.from(text).toString('base64url');

test('response shape: {runs, page_info}, RunItem members, no next_cursor on the last page, team isolation', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const stranger = await ctx.newTeamKey();
  await createRun(idle, stranger.key, { prompt: 'Another team' });

  expect(await list(key)).toEqual({ runs: [], page_info: { has_next_page: false } });

  const envShape = await createEnvironment(ctx, key, { name: 'shape' });
  const first = await createRun(idle, key, {
    prompt: 'Check the shape\nsecond line',
    title: 'Shape title',
    config: { name: 'shape', model_id: 'openai/shape-model', environment_id: envShape },
    metadata: { k: 'v' },
  });
  const body = await list(key);
  expect(Object.keys(body).sort()).toEqual(['page_info', 'runs']);
  expect(body.page_info).toEqual({ has_next_page: false });
  expect(body.runs).toHaveLength(1);
  const item = body.runs[0]!;
  expect(item).toMatchObject({
    run_id: first,
    task_id: first,
    title: 'Shape title',
    prompt: 'Check the shape\nsecond line',
    state: 'QUEUED',
    source: 'API',
    metadata: { k: 'v' },
    creator: { uid, type: 'user', display_name: expect.stringMatching(/^user-/) },
    agent_config: {
      name: 'shape',
      model_id: 'openai/shape-model',
      environment_id: envShape,
      idle_timeout_minutes: expect.any(Number),
    },
  });
  expect(item.created_at).toMatch(ISO_MS);
  expect(item.updated_at).toMatch(ISO_MS);
  // Every member the list carries agrees with the single-run fetch.
  const full = await getRun(ctx, key, first);
  for (const [member, value] of Object.entries(item)) expect({ [member]: full[member] }).toEqual({ [member]: value });

  const second = await createRun(idle, key, { prompt: 'Auto-titled run' });
  const page1 = await list(key, [['limit', '1']]);
  expect(ids(page1)).toEqual([second]);
  expect(page1.runs[0]!.title).toBe('Auto-titled run');
  expect(page1.page_info).toEqual({ has_next_page: true, next_cursor: expect.any(String) });
  expect(page1.page_info.next_cursor!.length).toBeGreaterThan(0);
  const page2 = await list(key, [
    ['limit', '1'],
    ['cursor', page1.page_info.next_cursor!],
  ]);
  expect(ids(page2)).toEqual([first]);
  expect(page2.page_info).toEqual({ has_next_page: false });

  // The other team's run is never listed, whatever the filter.
  expect(sorted(await listIds(key))).toEqual(sorted([first, second]));
  expect(await listIds(key, [['creator', stranger.uid]])).toEqual([]);
  expect((await ctx.api.get(PATH)).status).toBe(401);
});

test('state filter: single, repeated, client-only states, and it follows the live state', async () => {
  const { key } = await ctx.newTeamKey();
  const holdRun = uniqueName('list-inprogress');
  const cancelRun = uniqueName('list-cancel');
  const held = gate<{ text: string }>();
  ctx.model.script(holdRun, () => ({ hold: held.promise }));
  ctx.model.script(cancelRun, () => ({ hold: new Promise<{ text: string }>(() => undefined) }));

  const queued = await createRun(idle, key, { prompt: 'Stays queued' });
  const succeeded = await createRun(ctx, key, { prompt: 'Quick success' });
  const failed = await createRun(ctx, key, { prompt: 'No provider', config: { model_id: 'anthropic/x' } });
  const inProgress = await createRun(ctx, key, { prompt: `Slow ${holdRun}` });
  const cancelled = await createRun(ctx, key, { prompt: `Cancel me ${cancelRun}` });
  await waitForState(ctx, key, succeeded, ['SUCCEEDED']);
  await waitForState(ctx, key, failed, ['FAILED']);
  await ctx.model.waitForCalls(holdRun, 1);
  await ctx.model.waitForCalls(cancelRun, 1);
  expect((await ctx.api.post(`${PATH}/${cancelled}/cancel`).set(auth(key))).status).toBe(200);
  await waitForState(ctx, key, cancelled, ['CANCELLED']);
  await waitForState(ctx, key, inProgress, ['INPROGRESS']);

  expect(sorted(await listIds(key))).toEqual(sorted([queued, succeeded, failed, inProgress, cancelled]));
  const single: [string, string][] = [
    ['QUEUED', queued],
    ['INPROGRESS', inProgress],
    ['SUCCEEDED', succeeded],
    ['FAILED', failed],
    ['CANCELLED', cancelled],
  ];
  for (const [state, runId] of single) {
    const page = await list(key, [['state', state]]);
    expect({ state, ids: ids(page) }).toEqual({ state, ids: [runId] });
    expect(page.runs[0]!.state).toBe(state);
  }
  expect(
    sorted(
      await listIds(key, [
        ['state', 'QUEUED'],
        ['state', 'FAILED'],
      ]),
    ),
  ).toEqual(sorted([queued, failed]));
  expect(
    sorted(
      await listIds(key, [
        ['state', 'SUCCEEDED'],
        ['state', 'CANCELLED'],
        ['state', 'INPROGRESS'],
      ]),
    ),
  ).toEqual(sorted([succeeded, cancelled, inProgress]));
  expect(await listIds(key, [['state', 'ERROR']])).toEqual([]);
  expect(await listIds(key, [['state', 'PENDING']])).toEqual([]);
  await expectInvalid(key, [['state', 'DONE']], 'state');
  await expectInvalid(
    key,
    [
      ['state', 'QUEUED'],
      ['state', ''],
    ],
    'state',
  );

  held.release({ text: 'done now' });
  await waitForState(ctx, key, inProgress, ['SUCCEEDED']);
  expect(sorted(await listIds(key, [['state', 'SUCCEEDED']]))).toEqual(sorted([succeeded, inProgress]));
  expect(await listIds(key, [['state', 'INPROGRESS']])).toEqual([]);
});

test("task_status filter: a task board's statuses, any of them; running counts a live descendant", async () => {
  const { key } = await ctx.newTeamKey();
  const holdChild = uniqueName('list-child');
  const held = gate<{ text: string }>();
  ctx.model.script(holdChild, () => ({ hold: held.promise }));
  const parent = await createRun(ctx, key, { prompt: 'Quick success' });
  const failed = await createRun(ctx, key, { prompt: 'No provider', config: { model_id: 'anthropic/x' } });
  await waitForState(ctx, key, parent, ['SUCCEEDED']);
  await waitForState(ctx, key, failed, ['FAILED']);
  const child = await createRun(ctx, key, { prompt: `Child ${holdChild}`, parent_run_id: parent });
  await waitForState(ctx, key, child, ['INPROGRESS']);

  const byStatus = async (...statuses: string[]) =>
    sorted(
      await listIds(
        key,
        statuses.map((s): [string, string] => ['task_status', s]),
      ),
    );
  expect(await byStatus('running')).toEqual(sorted([parent, child]));
  expect(await byStatus('complete')).toEqual([parent]);
  expect(await byStatus('failed')).toEqual([failed]);
  expect(await byStatus('blocked')).toEqual([]);
  expect(await byStatus('cancelled')).toEqual([]);
  expect(await byStatus('running', 'failed')).toEqual(sorted([parent, child, failed]));
  // With the other filters, AND.
  expect(
    await listIds(key, [
      ['task_status', 'running'],
      ['state', 'SUCCEEDED'],
    ]),
  ).toEqual([parent]);
  await expectInvalid(key, [['task_status', 'done']], 'task_status');

  held.release({ text: 'child done' });
  await waitForState(ctx, key, child, ['SUCCEEDED']);
  expect(await byStatus('running')).toEqual([]);
  expect(await byStatus('complete')).toEqual(sorted([parent, child]));
});

test('name, model_id and source filters match exactly and combine with AND', async () => {
  const { key } = await ctx.newTeamKey();
  const alpha = await createRun(idle, key, { prompt: 'a', config: { name: 'alpha', model_id: 'openai/m-one' } });
  const beta = await createRun(idle, key, { prompt: 'b', config: { name: 'beta' } });
  const unnamed = await createRun(idle, key, { prompt: 'c' });

  expect(await listIds(key, [['name', 'alpha']])).toEqual([alpha]);
  expect(await listIds(key, [['name', 'beta']])).toEqual([beta]);
  expect(await listIds(key, [['name', 'alph']])).toEqual([]);
  expect(await listIds(key, [['model_id', 'openai/m-one']])).toEqual([alpha]);
  expect(sorted(await listIds(key, [['model_id', 'openai/test-model']]))).toEqual(sorted([beta, unnamed]));
  expect(await listIds(key, [['model_id', 'openai/m']])).toEqual([]);
  expect(
    await listIds(key, [
      ['name', 'beta'],
      ['model_id', 'openai/m-one'],
    ]),
  ).toEqual([]);
  expect(
    await listIds(key, [
      ['name', 'alpha'],
      ['model_id', 'openai/m-one'],
    ]),
  ).toEqual([alpha]);

  expect(sorted(await listIds(key, [['source', 'API']]))).toEqual(sorted([alpha, beta, unnamed]));
  expect(await listIds(key, [['source', 'SLACK']])).toEqual([]);
  // Every source the official clients know is a valid filter, newer ones included.
  for (const source of ['ORCHESTRATION', 'JIRA', 'RUN_SCORER'])
    expect(await listIds(key, [['source', source]])).toEqual([]);
  expect(await listIds(key, [['source', 'SCHEDULED_AGENT']])).toEqual([]);
  await expectInvalid(key, [['source', 'CARRIER_PIGEON']], 'source');
  await expectInvalid(
    key,
    [
      ['name', 'alpha'],
      ['name', 'beta'],
    ],
    'name',
  );
});

test('creator filter: two principals of one team see each other’s runs and filter by uid', async () => {
  const person = await ctx.newTeamKey();
  const agent = await ctx.newTeamKey('agent', person.team);
  const outsider = await ctx.newTeamKey();
  const p1 = await createRun(idle, person.key, { prompt: 'by person 1' });
  const p2 = await createRun(idle, person.key, { prompt: 'by person 2' });
  const a1 = await createRun(idle, agent.key, { prompt: 'by agent' });
  await createRun(idle, outsider.key, { prompt: 'elsewhere' });

  for (const key of [person.key, agent.key]) {
    expect(sorted(await listIds(key))).toEqual(sorted([p1, p2, a1]));
    expect(sorted(await listIds(key, [['creator', person.uid]]))).toEqual(sorted([p1, p2]));
    expect(await listIds(key, [['creator', agent.uid]])).toEqual([a1]);
    expect(await listIds(key, [['creator', outsider.uid]])).toEqual([]);
    expect(await listIds(key, [['creator', 'usr_nobody']])).toEqual([]);
  }
  const byAgent = await list(person.key, [['creator', agent.uid]]);
  expect(byAgent.runs[0]!.creator).toEqual({
    uid: agent.uid,
    type: 'service_account',
    display_name: expect.stringMatching(/^agent-/),
  });
  const byPerson = await list(agent.key, [['creator', person.uid]]);
  expect(byPerson.runs.map((r) => r.creator.type)).toEqual(['user', 'user']);
});

test('environment_id filter, with empty-environment for runs without one', async () => {
  const { key } = await ctx.newTeamKey();
  const [envA, envB, envC] = [
    await createEnvironment(ctx, key, { name: 'env a' }),
    await createEnvironment(ctx, key, { name: 'env b' }),
    await createEnvironment(ctx, key, { name: 'env c, unused' }),
  ];
  const a1 = await createRun(idle, key, { prompt: 'e1', config: { environment_id: envA } });
  const b = await createRun(idle, key, { prompt: 'e2', config: { environment_id: envB } });
  const none = await createRun(idle, key, { prompt: 'e3' });
  const a2 = await createRun(idle, key, { prompt: 'e4', config: { environment_id: envA } });

  expect(sorted(await listIds(key, [['environment_id', envA]]))).toEqual(sorted([a1, a2]));
  expect(await listIds(key, [['environment_id', envB]])).toEqual([b]);
  expect((await list(key, [['environment_id', envB]])).runs[0]!.agent_config.environment_id).toBe(envB);
  expect(await listIds(key, [['environment_id', 'empty-environment']])).toEqual([none]);
  expect(await listIds(key, [['environment_id', envC]])).toEqual([]);
  expect(await listIds(key, [['environment_id', 'no-such-environment']])).toEqual([]);
  expect((await list(key, [['environment_id', 'empty-environment']])).runs[0]!.agent_config).not.toHaveProperty(
    'environment_id',
  );
});

test('skill_spec filter and its alias skill; `skill` wins over config.skill_spec', async () => {
  const { key } = await ctx.newTeamKey();
  const skillOnly = await createRun(idle, key, { skill: 'acme/tools:deploy' });
  const byPath = await createRun(idle, key, {
    prompt: 'use the skill file',
    config: { skill_spec: 'acme/tools:path/to/SKILL.md' },
  });
  const both = await createRun(idle, key, {
    prompt: 'two skills',
    skill: 'acme/tools:deploy',
    config: { skill_spec: 'acme/other:lint' },
  });
  const plain = await createRun(idle, key, { prompt: 'no skill' });

  for (const param of ['skill_spec', 'skill']) {
    expect(sorted(await listIds(key, [[param, 'acme/tools:deploy']]))).toEqual(sorted([skillOnly, both]));
    expect(await listIds(key, [[param, 'acme/tools:path/to/SKILL.md']])).toEqual([byPath]);
    expect(await listIds(key, [[param, 'acme/other:lint']])).toEqual([]);
    await expectInvalid(key, [[param, 'not-a-skill']], 'skill_spec');
    await expectInvalid(key, [[param, 'acme/tools']], 'skill_spec');
  }
  expect(sorted(await listIds(key))).toEqual(sorted([skillOnly, byPath, both, plain]));

  const item = (await list(key, [['skill', 'acme/tools:deploy']])).runs.find((r) => r.run_id === skillOnly)!;
  expect(item).toMatchObject({ prompt: '', title: 'Run skill acme/tools:deploy' });
  expect(item.agent_config.skill_spec).toBe('acme/tools:deploy');

  // The alias is the same filter: a cursor from one works with the other.
  const first = await list(key, [
    ['skill', 'acme/tools:deploy'],
    ['limit', '1'],
  ]);
  const rest = await list(key, [
    ['skill_spec', 'acme/tools:deploy'],
    ['limit', '1'],
    ['cursor', first.page_info.next_cursor!],
  ]);
  expect(sorted([...ids(first), ...ids(rest)])).toEqual(sorted([skillOnly, both]));
  expect(rest.page_info.has_next_page).toBe(false);
});

test('created_after, created_before and updated_after: strict bounds, offsets, and bad timestamps are 400', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('list-time');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: held.promise }));
  const early = await createRun(ctx, key, { prompt: `Early ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  const earlyItem = (await waitForState(ctx, key, early, ['INPROGRESS'])) as unknown as Item;
  await after(earlyItem.updated_at);
  const [r1, r2, r3] = await createInSequence(idle, key, [{ prompt: 't1' }, { prompt: 't2' }, { prompt: 't3' }]);
  const [t1, t2, t3] = [r1!.created_at, r2!.created_at, r3!.created_at];
  expect(Date.parse(earlyItem.created_at)).toBeLessThan(Date.parse(t1));

  expect(await listIds(key, [['created_after', t1]])).toEqual([r3!.run_id, r2!.run_id]);
  expect(await listIds(key, [['created_before', t3]])).toEqual([r2!.run_id, r1!.run_id, early]);
  expect(
    await listIds(key, [
      ['created_after', t1],
      ['created_before', t3],
    ]),
  ).toEqual([r2!.run_id]);
  expect(await listIds(key, [['created_after', t3]])).toEqual([]);
  const justBefore = new Date(Date.parse(t1) - 1).toISOString();
  expect(await listIds(key, [['created_after', justBefore]])).toEqual([r3!.run_id, r2!.run_id, r1!.run_id]);
  // The same instants written with a +05:30 offset.
  const withOffset = (iso: string) => new Date(Date.parse(iso) + 330 * 60_000).toISOString().replace('Z', '+05:30');
  expect(await listIds(key, [['created_before', withOffset(t2)]])).toEqual([r1!.run_id, early]);
  expect(await listIds(key, [['created_after', withOffset(t2)]])).toEqual([r3!.run_id]);
  expect(await listIds(key, [['created_after', '2000-01-01T00:00:00Z']])).toHaveLength(4);

  // updated_after sees the early run only once it changes again, after the others were created.
  expect(await listIds(key, [['updated_after', t3]])).toEqual([]);
  await after(t3);
  held.release({ text: 'finished' });
  const done = (await waitForState(ctx, key, early, ['SUCCEEDED'])) as unknown as Item;
  expect(Date.parse(done.updated_at)).toBeGreaterThan(Date.parse(t3));
  expect(await listIds(key, [['updated_after', t3]])).toEqual([early]);
  expect(await listIds(key, [['updated_after', done.updated_at]])).toEqual([]);
  expect(await listIds(key, [['created_after', t3]])).toEqual([]);
  expect(
    await listIds(key, [
      ['updated_after', t1],
      ['created_before', t1],
    ]),
  ).toEqual([early]);

  for (const bad of [
    '2026-01-01',
    'yesterday',
    '1767261600',
    '2026-13-01T00:00:00Z',
    '2026-02-31T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T10:00:00+25:00',
    '',
  ]) {
    for (const param of ['created_after', 'created_before', 'updated_after']) {
      await expectInvalid(key, [[param, bad]], param);
    }
  }
  await expectInvalid(
    key,
    [
      ['created_after', t1],
      ['created_after', t2],
    ],
    'created_after',
  );
});

test('q: case-insensitive substring of title, prompt or skill_spec; % _ and \\ match literally', async () => {
  const { key } = await ctx.newTeamKey();
  const rollout = await createRun(idle, key, { title: 'Deploy the 100% Rollout', prompt: 'ship it' });
  const underscore = await createRun(idle, key, { prompt: 'fix the under_score helper' });
  const skill = await createRun(idle, key, { title: 'Indexer', prompt: 'reindex', skill: 'acme/Search-Tools:index' });
  const windows = await createRun(idle, key, { title: 'Plain', prompt: 'Windows path C:\\temp\\new' });
  const hundred = await createRun(idle, key, { title: '100 percent', prompt: 'nothing special' });

  expect(await listIds(key, [['q', 'rollout']])).toEqual([rollout]);
  expect(await listIds(key, [['q', 'ROLLOUT']])).toEqual([rollout]);
  expect(await listIds(key, [['q', 'UNDER_SCORE']])).toEqual([underscore]);
  expect(await listIds(key, [['q', 'search-tools']])).toEqual([skill]);
  expect(await listIds(key, [['q', 'SHIP']])).toEqual([rollout]);
  expect(sorted(await listIds(key, [['q', '100']]))).toEqual(sorted([rollout, hundred]));
  expect(await listIds(key, [['q', '%']])).toEqual([rollout]);
  expect(await listIds(key, [['q', '_']])).toEqual([underscore]);
  expect(await listIds(key, [['q', '100%']])).toEqual([rollout]);
  expect(await listIds(key, [['q', '0% r']])).toEqual([rollout]);
  expect(await listIds(key, [['q', '0%r']])).toEqual([]);
  expect(await listIds(key, [['q', '100_']])).toEqual([]);
  expect(await listIds(key, [['q', 's_ip']])).toEqual([]);
  expect(await listIds(key, [['q', 'C:\\t']])).toEqual([windows]);
  expect(await listIds(key, [['q', '\\']])).toEqual([windows]);
  expect(await listIds(key, [['q', 'no such text']])).toEqual([]);
  expect(
    await listIds(key, [
      ['q', '100'],
      ['name', 'x'],
    ]),
  ).toEqual([]);
  await expectInvalid(key, [['q', 'x'.repeat(1001)]], '`q`');
});

test('metadata[KEY]=VALUE: one pair, two pairs ANDed, at most 5 pairs', async () => {
  const { key } = await ctx.newTeamKey();
  const prodA = await createRun(idle, key, { prompt: 'm1', metadata: { env: 'prod', team: 'a' } });
  const prodB = await createRun(idle, key, { prompt: 'm2', metadata: { env: 'prod', team: 'b' } });
  const dev = await createRun(idle, key, { prompt: 'm3', metadata: { env: 'dev' } });
  await createRun(idle, key, { prompt: 'm4' });

  expect(sorted(await listIds(key, [['metadata[env]', 'prod']]))).toEqual(sorted([prodA, prodB]));
  expect(await listIds(key, [['metadata[env]', 'dev']])).toEqual([dev]);
  expect(
    await listIds(key, [
      ['metadata[env]', 'prod'],
      ['metadata[team]', 'b'],
    ]),
  ).toEqual([prodB]);
  expect(
    await listIds(key, [
      ['metadata[team]', 'b'],
      ['metadata[env]', 'dev'],
    ]),
  ).toEqual([]);
  expect(await listIds(key, [['metadata[env]', 'staging']])).toEqual([]);
  expect(await listIds(key, [['metadata[env]', '']])).toEqual([]);
  expect(await listIds(key, [['metadata[missing]', 'prod']])).toEqual([]);
  // A key that is special in JavaScript is still a filter, not silently dropped.
  expect(await listIds(key, [['metadata[__proto__]', 'prod']])).toEqual([]);
  expect(await listIds(key, [['metadata[constructor]', 'prod']])).toEqual([]);

  const five: Params = [
    ['metadata[env]', 'prod'],
    ['metadata[team]', 'a'],
    ['metadata[k3]', 'x'],
    ['metadata[k4]', 'x'],
    ['metadata[k5]', 'x'],
  ];
  expect(await listIds(key, five)).toEqual([]);
  expect(await listIds(key, five.slice(0, 2))).toEqual([prodA]);
  await expectInvalid(key, [...five, ['metadata[k6]', 'x']], '5');
  await expectInvalid(key, [['metadata[bad key]', 'x']], 'metadata');
  await expectInvalid(key, [['metadata', 'x']], 'metadata');
  await expectInvalid(
    key,
    [
      ['metadata[env]', 'prod'],
      ['metadata[env]', 'dev'],
    ],
    'metadata[env]',
  );
});

test('sort_by and sort_order give the exact order, ties broken by run id, and pages follow it', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('list-sort');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: held.promise }));
  const r1 = await createRun(idle, key, { title: 'b', prompt: 'p1' });
  await after((await getRun(ctx, key, r1)).created_at as string);
  const r2 = await createRun(ctx, key, { title: 'a', prompt: `p2 ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  const r2Started = await waitForState(ctx, key, r2, ['INPROGRESS']);
  await after(r2Started.updated_at as string);
  const [i3, i4, i5] = await createInSequence(idle, key, [
    { title: 'Zed', prompt: 'p3' },
    { title: 'a', prompt: 'p4' },
    { title: 'c', prompt: 'p5' },
  ]);
  const [r3, r4, r5] = [i3!.run_id, i4!.run_id, i5!.run_id];
  await after(i5!.updated_at);
  held.release({ text: 'ok' });
  await waitForState(ctx, key, r2, ['SUCCEEDED']);
  expect(r2 < r4).toBe(true); // time-ordered ids: the earlier 'a' sorts first among equal titles

  const orders: [Params, string[]][] = [
    [[], [r2, r5, r4, r3, r1]],
    [[['sort_by', 'updated_at']], [r2, r5, r4, r3, r1]],
    [[['sort_order', 'desc']], [r2, r5, r4, r3, r1]],
    [[['sort_order', 'asc']], [r1, r3, r4, r5, r2]],
    [
      [
        ['sort_by', 'created_at'],
        ['sort_order', 'asc'],
      ],
      [r1, r2, r3, r4, r5],
    ],
    [[['sort_by', 'created_at']], [r5, r4, r3, r2, r1]],
    // Byte order: upper case before lower case.
    [
      [
        ['sort_by', 'title'],
        ['sort_order', 'asc'],
      ],
      [r3, r2, r4, r1, r5],
    ],
    [[['sort_by', 'title']], [r5, r1, r4, r2, r3]],
  ];
  for (const [params, expected] of orders) {
    expect({ params, order: await listIds(key, params) }).toEqual({ params, order: expected });
    for (const limit of ['1', '2']) {
      const walked = await walk(key, [...params, ['limit', limit]]);
      expect({ params, limit, order: walked.ids }).toEqual({ params, limit, order: expected });
    }
  }
  await expectInvalid(key, [['sort_by', 'state']], 'sort_by');
  await expectInvalid(key, [['sort_by', 'CREATED_AT']], 'sort_by');
  await expectInvalid(key, [['sort_order', 'ascending']], 'sort_order');
});

test('sort_by=agent: by the skill in byte order, runs without one last in either order, pages follow it', async () => {
  const { key } = await ctx.newTeamKey();
  const [a, z, upper, a2] = [
    await createRun(idle, key, { skill: 'acme/tools:deploy' }),
    await createRun(idle, key, { skill: 'zeta/tools:lint' }),
    await createRun(idle, key, { skill: 'Acme/tools:deploy' }),
    await createRun(idle, key, { skill: 'acme/tools:deploy' }),
  ];
  const [none1, none2] = [
    await createRun(idle, key, { prompt: 'no skill' }),
    await createRun(idle, key, { prompt: 'none' }),
  ];
  const orders: [Params, string[]][] = [
    [
      [
        ['sort_by', 'agent'],
        ['sort_order', 'asc'],
      ],
      [upper!, ...sorted([a!, a2!]), z!, ...sorted([none1!, none2!])],
    ],
    [[['sort_by', 'agent']], [z!, ...sorted([a!, a2!]).reverse(), upper!, ...sorted([none1!, none2!]).reverse()]],
  ];
  for (const [params, expected] of orders) {
    expect({ params, order: await listIds(key, params) }).toEqual({ params, order: expected });
    for (const limit of ['1', '2', '4']) {
      const walked = await walk(key, [...params, ['limit', limit]]);
      expect({ params, limit, order: walked.ids }).toEqual({ params, limit, order: expected });
    }
  }
});

test('limit: default 20, bounds 1..100, has_next_page exact at the boundary', async () => {
  const { key } = await ctx.newTeamKey();
  const all = await Promise.all(Array.from({ length: 21 }, (_, i) => createRun(idle, key, { prompt: `run ${i}` })));

  const first = await list(key);
  expect(first.runs).toHaveLength(20);
  expect(first.page_info).toEqual({ has_next_page: true, next_cursor: expect.any(String) });
  const second = await list(key, [['cursor', first.page_info.next_cursor!]]);
  expect(second.runs).toHaveLength(1);
  expect(second.page_info).toEqual({ has_next_page: false });
  expect(sorted([...ids(first), ...ids(second)])).toEqual(sorted(all));

  const exact = await list(key, [['limit', '21']]);
  expect(exact.runs).toHaveLength(21);
  expect(exact.page_info).toEqual({ has_next_page: false });
  expect((await list(key, [['limit', '100']])).runs).toHaveLength(21);
  const one = await list(key, [['limit', '1']]);
  expect(one.runs).toHaveLength(1);
  expect(one.page_info.has_next_page).toBe(true);
  expect((await list(key, [['limit', '20']])).page_info.has_next_page).toBe(true);

  for (const bad of ['0', '101', '-1', '1.5', 'abc', '', '1e1', ' 5']) {
    await expectInvalid(key, [['limit', bad]], 'limit');
  }
  await expectInvalid(
    key,
    [
      ['limit', '5'],
      ['limit', '6'],
    ],
    'limit',
  );
});

test('keyset cursor: 23 runs, limit 5, every sort visits every run exactly once in order', async () => {
  const { key } = await ctx.newTeamKey();
  const titles = ['t-b', 't-a', 't-c'];
  // Created in parallel, so many share a created_at millisecond: ties must be broken by run id.
  const all = await Promise.all(
    Array.from({ length: 23 }, (_, i) =>
      createRun(idle, key, {
        title: titles[i % 3],
        prompt: `keyset ${i}`,
        metadata: i % 2 === 0 ? { half: 'yes' } : {},
      }),
    ),
  );
  const half = all.filter((_, i) => i % 2 === 0);

  const sorts: ['created_at' | 'updated_at' | 'title', 'asc' | 'desc'][] = [
    ['updated_at', 'desc'],
    ['updated_at', 'asc'],
    ['created_at', 'desc'],
    ['created_at', 'asc'],
    ['title', 'asc'],
    ['title', 'desc'],
  ];
  for (const [sortBy, order] of sorts) {
    const params: Params = [
      ['sort_by', sortBy],
      ['sort_order', order],
    ];
    const full = await list(key, [...params, ['limit', '100']]);
    expect(sorted(ids(full))).toEqual(sorted(all));
    expectKeysetOrder(full.runs, sortBy, order);
    expect(ids(await list(key, [...params, ['limit', '100']]))).toEqual(ids(full));

    const walked = await walk(key, [...params, ['limit', '5']]);
    expect(walked.pages.map((p) => p.runs.length)).toEqual([5, 5, 5, 5, 3]);
    expect(walked.pages.map((p) => p.page_info.has_next_page)).toEqual([true, true, true, true, false]);
    expect({ sortBy, order, ids: walked.ids }).toEqual({ sortBy, order, ids: ids(full) });
    expect(new Set(walked.ids).size).toBe(23);
  }

  // With filters the cursor carries on through the filtered set only.
  const filtered = await walk(key, [
    ['metadata[half]', 'yes'],
    ['state', 'QUEUED'],
    ['sort_by', 'title'],
    ['limit', '5'],
  ]);
  expect(filtered.pages.map((p) => p.runs.length)).toEqual([5, 5, 2]);
  expect(sorted(filtered.ids)).toEqual(sorted(half));
  expectKeysetOrder(
    filtered.pages.flatMap((p) => p.runs),
    'title',
    'desc',
  );
});

test.each(['asc', 'desc'] as const)(
  'keyset cursor by created_at %s while runs are created and updated between pages',
  async (order) => {
    const { key } = await ctx.newTeamKey();
    const initial = await Promise.all(
      Array.from({ length: 14 }, (_, i) => createRun(ctx, key, { prompt: `existing ${i}` })),
    );
    await waitForCount(key, [['state', 'SUCCEEDED']], 14);
    const walkStarted = new Date().toISOString();
    await after(walkStarted);

    const created: string[] = [];
    const updated: string[] = [];
    const read: string[] = [];
    const walked = await walk(
      key,
      [
        ['sort_by', 'created_at'],
        ['sort_order', order],
        ['limit', '4'],
      ],
      async (pageIndex, page) => {
        read.push(...ids(page));
        // Reopen one run already read and one not read yet (their created_at stays), add two new runs.
        const readOne = read.find((id) => initial.includes(id) && !updated.includes(id));
        const unreadOne = initial.find((id) => !read.includes(id) && !updated.includes(id));
        for (const runId of [readOne, unreadOne]) {
          if (runId) {
            await followup(key, runId);
            updated.push(runId);
          }
        }
        created.push(await createRun(ctx, key, { prompt: `new during page ${pageIndex} a` }));
        created.push(await createRun(ctx, key, { prompt: `new during page ${pageIndex} b` }));
      },
    );

    expect(walked.pages.length).toBeGreaterThan(2);
    expect(new Set(walked.ids).size).toBe(walked.ids.length);
    for (const runId of initial) expect(walked.ids.filter((id) => id === runId)).toHaveLength(1);
    // Ascending, the new runs come after every existing one and are reached; descending, never.
    if (order === 'asc') expect(sorted(walked.ids)).toEqual(sorted([...initial, ...created]));
    else expect(sorted(walked.ids)).toEqual(sorted(initial));
    expectKeysetOrder(
      walked.pages.flatMap((p) => p.runs),
      'created_at',
      order,
    );
    // The updates really happened while the walk was under way.
    for (const runId of updated) {
      expect(Date.parse((await getRun(ctx, key, runId)).updated_at as string)).toBeGreaterThan(Date.parse(walkStarted));
    }
  },
);

test('keyset cursor by updated_at: runs that keep their sort key are seen exactly once while others move', async () => {
  const { key } = await ctx.newTeamKey();
  const initial = await Promise.all(
    Array.from({ length: 14 }, (_, i) => createRun(ctx, key, { prompt: `steady ${i}` })),
  );
  await waitForCount(key, [['state', 'SUCCEEDED']], 14);
  const before = ids(await list(key, [['limit', '100']]));
  expect(sorted(before)).toEqual(sorted(initial));

  const moved = new Set<string>();
  const created: string[] = [];
  const read = new Set<string>();
  const walked = await walk(key, [['limit', '4']], async (pageIndex, page) => {
    for (const id of ids(page)) read.add(id);
    // Move two runs that are still ahead of the cursor to the top, and one already read.
    const ahead = before.filter((id) => !read.has(id) && !moved.has(id));
    const behind = before.filter((id) => read.has(id) && !moved.has(id));
    for (const runId of [...ahead.slice(0, 2), ...behind.slice(0, 1)]) {
      await followup(key, runId);
      moved.add(runId);
    }
    created.push(await createRun(ctx, key, { prompt: `fresh ${pageIndex}` }));
  });

  expect(moved.size).toBeGreaterThan(3);
  expect(new Set(walked.ids).size).toBe(walked.ids.length);
  const steady = before.filter((id) => !moved.has(id));
  expect(steady.length).toBeGreaterThan(0);
  for (const runId of steady) expect(walked.ids.filter((id) => id === runId)).toHaveLength(1);
  // Unchanged runs keep their relative order; new runs are ahead of the first page and never reached.
  expect(walked.ids.filter((id) => steady.includes(id))).toEqual(steady);
  for (const runId of created) expect(walked.ids).not.toContain(runId);
});

test('a cursor is tied to its filters and sort; reordered but equal filters keep working', async () => {
  const { key } = await ctx.newTeamKey();
  const runs = await Promise.all(
    Array.from({ length: 3 }, (_, i) => createRun(idle, key, { prompt: `cursor ${i}`, metadata: { g: '1', h: '2' } })),
  );
  const filters: Params = [
    ['state', 'QUEUED'],
    ['state', 'INPROGRESS'],
    ['metadata[g]', '1'],
    ['metadata[h]', '2'],
  ];
  const first = await list(key, [...filters, ['limit', '1']]);
  const cursor = first.page_info.next_cursor!;
  expect(cursor).toEqual(expect.any(String));
  const rest = await list(key, [...filters, ['limit', '5'], ['cursor', cursor]]);
  expect(sorted([...ids(first), ...ids(rest)])).toEqual(sorted(runs));
  const reordered = await list(key, [
    ['metadata[h]', '2'],
    ['cursor', cursor],
    ['state', 'INPROGRESS'],
    ['limit', '5'],
    ['metadata[g]', '1'],
    ['state', 'QUEUED'],
  ]);
  expect(ids(reordered)).toEqual(ids(rest));

  const mismatched: Params[] = [
    [],
    [['state', 'QUEUED']],
    [...filters, ['q', 'cursor']],
    [...filters.slice(0, 3), ['metadata[h]', '3']],
    [...filters, ['sort_by', 'created_at']],
    [...filters, ['sort_by', 'title']],
    [...filters, ['sort_order', 'asc']],
    [...filters, ['created_after', '2000-01-01T00:00:00.000Z']],
  ];
  for (const params of mismatched) await expectInvalid(key, [...params, ['cursor', cursor]], 'cursor');

  // Anything but a cursor this service issued is 400, never a 500.
  const forged = [
    'not a cursor!',
    b64('null'),
    b64('[]'),
    b64('"x"'),
    b64('{}'),
    b64('{"v":'),
    forge(cursor, { v: 'abc' }),
    forge(cursor, { v: 5 }),
    forge(cursor, { v: '2026-02-30T00:00:00.000Z' }),
    forge(cursor, { v: '0000-01-01T00:00:00.000Z' }),
    forge(cursor, { v: '+010000-01-01T00:00:00.000Z' }),
    forge(cursor, { v: '-000001-01-01T00:00:00.000Z' }),
    forge(cursor, { v: 'infinity' }),
    forge(cursor, { v: '2026-01-01' }),
    forge(cursor, { id: '-'.repeat(36) }),
    forge(cursor, { id: 'not-a-uuid' }),
    forge(cursor, { f: 'other' }),
  ];
  for (const bad of forged) await expectInvalid(key, [...filters, ['cursor', bad]], 'cursor');
  // A well-formed position is accepted: the cursor is only a place in the order.
  const future = await list(key, [...filters, ['cursor', forge(cursor, { v: '2999-01-01T00:00:00.000Z' })]]);
  expect(sorted(ids(future))).toEqual(sorted(runs));

  const byTitle: Params = [
    ['sort_by', 'title'],
    ['limit', '1'],
  ];
  const titleCursor = (await list(key, byTitle)).page_info.next_cursor!;
  await expectInvalid(key, [...byTitle, ['cursor', forge(titleCursor, { v: 'a\u0000b' })]], 'cursor');
  await expectInvalid(key, [...byTitle, ['cursor', forge(titleCursor, { v: null })]], 'cursor');
  expect((await list(key, [...byTitle, ['cursor', forge(titleCursor, { v: '~' })]])).runs).toHaveLength(1);
  // A genuine cursor of another sort is refused as such.
  await expectInvalid(key, [['cursor', titleCursor]], 'other filters or another sort');
});

test('malformed queries are 400 naming the parameter, never 500', async () => {
  const { key } = await ctx.newTeamKey();
  await createRun(idle, key, { prompt: 'something', metadata: { a: 'b' } });
  const cases: [Params, string][] = [
    [[['q', 'a\u0000b']], '`q`'],
    [[['name', '\u0000']], '`name`'],
    [[['model_id', 'openai/\u0000']], '`model_id`'],
    [[['creator', 'usr_\u0000']], '`creator`'],
    [[['environment_id', '\u0000']], '`environment_id`'],
    [[['metadata[a]', 'b\u0000']], 'metadata[a]'],
    [[['state', '\u0000']], '`state`'],
    [[['foo', '1']], '`foo`'],
    [[['metadata[a', 'b']], 'metadata[a'],
    [[['sortBy', 'title']], '`sortBy`'],
  ];
  for (const [params, mention] of cases) await expectInvalid(key, params, mention);
});
