import type { EntityManager } from 'typeorm';
import { listAgentIdentities } from '../db/agent-identity-reads';
import { listTeamSkills } from '../db/environment-skill-reads';
import { listEnvironments } from '../db/environment-reads';
import { listFactories } from '../db/factory-reads';
import { listRuns } from '../db/run-reads';
import { listSchedules } from '../db/schedule-reads';
import { listWebhooks } from '../db/webhook-reads';
import { maintenanceScheduleId } from '../workflows/maintenance-contract';
import { createEnvironment } from './helpers/environments';
import { createFactory } from './helpers/factories';
import { recordWorkflowReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext({ env: { OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1' } });
});

afterAll(async () => {
  await ctx?.close();
});

interface Page {
  page_info: { has_next_page: boolean; next_cursor?: string };
  [list: string]: unknown;
}

/** Every item of a list, read `limit` at a time; also how many pages that took. */
async function walk(key: string, path: string, list: string, limit: number, query = '') {
  const items: { [field: string]: unknown }[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const params = new URLSearchParams(query);
    params.set('limit', String(limit));
    if (cursor) params.set('cursor', cursor);
    const res = await ctx.api.get(`${path}?${params.toString()}`).set(auth(key));
    expect(res.status).toBe(200);
    const page = res.body as Page;
    const rows = page[list] as { [field: string]: unknown }[];
    expect(rows.length).toBeLessThanOrEqual(limit);
    items.push(...rows);
    pages += 1;
    cursor = page.page_info.has_next_page ? page.page_info.next_cursor : undefined;
    if (page.page_info.has_next_page) expect(cursor).toEqual(expect.any(String));
  } while (cursor);
  return { items, pages };
}

async function whole(key: string, path: string, list: string, query = '') {
  const res = await ctx.api.get(`${path}${query ? `?${query}` : ''}`).set(auth(key));
  expect(res.status).toBe(200);
  expect((res.body as Page).page_info).toEqual({ has_next_page: false });
  return (res.body as Page)[list] as { [field: string]: unknown }[];
}

test('environments page by name and by last update, each page in order, none lost or repeated', async () => {
  const { key } = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  await createEnvironment(ctx, other.key, { name: 'other team' });
  // Names that sort differently byte-wise and by locale, and a tie broken by uid.
  for (const name of ['beta', 'Alpha', 'alpha', 'gamma', 'beta', '_under']) await createEnvironment(ctx, key, { name });

  const byName = await whole(key, '/api/v1/agent/environments', 'environments', 'sort_by=name');
  expect(byName.map((e) => (e.config as { name: string }).name)).toEqual([
    'Alpha',
    '_under',
    'alpha',
    'beta',
    'beta',
    'gamma',
  ]);
  const walkedByName = await walk(key, '/api/v1/agent/environments', 'environments', 2, 'sort_by=name');
  expect(walkedByName.pages).toBe(3);
  expect(walkedByName.items).toEqual(byName);

  const byUpdate = await whole(key, '/api/v1/agent/environments', 'environments');
  expect(byUpdate.map((e) => e.last_updated)).toEqual(
    [...byUpdate.map((e) => e.last_updated as string)].sort().reverse(),
  );
  const walkedByUpdate = await walk(key, '/api/v1/agent/environments', 'environments', 4);
  expect(walkedByUpdate.pages).toBe(2);
  expect(walkedByUpdate.items).toEqual(byUpdate);
});

test('a cursor of another sort, or one the service did not issue, is a 400 that says what to do', async () => {
  const { key } = await ctx.newTeamKey();
  for (const name of ['a', 'b']) await createEnvironment(ctx, key, { name });
  const first = await ctx.api.get('/api/v1/agent/environments?limit=1&sort_by=name').set(auth(key));
  const cursor = (first.body as Page).page_info.next_cursor!;

  const otherSort = await ctx.api.get(`/api/v1/agent/environments?cursor=${cursor}`).set(auth(key));
  expect(otherSort.status).toBe(400);
  expect(otherSort.body.detail).toContain('issued for `sort_by=name`');

  const forge = (payload: object) => Buffer.from(JSON.stringify(payload)).toString('base64url');
  for (const [path, bad] of [
    ['/api/v1/agent/environments', forge({ s: 'last_updated', v: '2026-02-30T00:00:00.000000Z', k: 'x' })],
    ['/api/v1/agent/environments', forge({ s: 'last_updated', v: 'yesterday', k: 'x' })],
    ['/api/v1/agent/environments?sort_by=name', forge({ s: 'name', v: 'a\u0000', k: 'x' })],
    ['/api/v1/agent/schedules', forge({ s: 'created_at', v: '2026-01-01T00:00:00.000000Z', k: 'not-a-uuid' })],
    ['/api/v1/agent/factories', 'not base64 json'],
  ] as const) {
    const res = await ctx.api
      .get(`${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(bad)}`)
      .set(auth(key));
    expect({ path, status: res.status }).toEqual({ path, status: 400 });
    expect(res.body.detail).toContain('pass `page_info.next_cursor` unchanged');
  }

  for (const limit of ['0', '1001', 'ten']) {
    const res = await ctx.api.get(`/api/v1/agent/factories?limit=${limit}`).set(auth(key));
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('limit');
  }
  const unknown = await ctx.api.get('/api/v1/agent/webhooks?sort_by=name').set(auth(key));
  expect(unknown.status).toBe(400);
});

test("agent identities page oldest first, filter by factory_uid as the official client sends it, and never show another team's", async () => {
  const { key } = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }]);
  const foreign = await createFactory(ctx, other.key, [{ type: 'FOREMAN' }]);
  for (let i = 0; i < 3; i++) {
    const res = await ctx.api
      .post('/api/v1/agent/identities')
      .set(auth(key))
      .send({ name: uniqueName('solo') });
    expect(res.status).toBe(201);
  }

  const all = await whole(key, '/api/v1/agent/identities', 'agents');
  expect(all).toHaveLength(5);
  expect(all.map((a) => a.created_at)).toEqual([...all.map((a) => a.created_at as string)].sort());
  const walked = await walk(key, '/api/v1/agent/identities', 'agents', 2);
  expect(walked.pages).toBe(3);
  expect(walked.items).toEqual(all);

  const members = await whole(key, '/api/v1/agent/identities', 'agents', `factory_uid=${factory.uid}`);
  expect(members.map((a) => a.uid).sort()).toEqual(Object.values(factory.agents).sort());
  const walkedMembers = await walk(key, '/api/v1/agent/identities', 'agents', 1, `factory_uid=${factory.uid}`);
  expect(walkedMembers.items).toEqual(members);

  const foreignFilter = await ctx.api.get(`/api/v1/agent/identities?factory_uid=${foreign.uid}`).set(auth(key));
  expect(foreignFilter.status).toBe(404);
  expect(foreignFilter.body.detail).toContain(foreign.uid);
});

test('factories, schedules and webhooks page too', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  for (let i = 0; i < 3; i++) {
    await createFactory(ctx, key, []);
    const schedule = await ctx.api
      .post('/api/v1/agent/schedules')
      .set(auth(key))
      .send({ name: uniqueName('schedule'), cron_schedule: '0 9 * * *', prompt: 'p', enabled: false });
    expect(schedule.status).toBe(201);
    const webhook = await ctx.api
      .post('/api/v1/agent/webhooks')
      .set(auth(key))
      .send({ url: `http://127.0.0.1:9/hooks/${i}` });
    expect(webhook.status).toBe(201);
  }
  for (const [path, list] of [
    ['/api/v1/agent/factories', 'factories'],
    ['/api/v1/agent/schedules', 'schedules'],
    ['/api/v1/agent/webhooks', 'webhooks'],
  ] as const) {
    const all = await whole(key, path, list);
    expect({ path, count: all.length }).toEqual({ path, count: 3 });
    const walked = await walk(key, path, list, 2);
    expect({ path, pages: walked.pages }).toEqual({ path, pages: 2 });
    expect(walked.items).toEqual(all);
  }
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every node of an EXPLAIN (FORMAT JSON) plan. */
function planNodes(explained: unknown): PlanNode[] {
  const nodes: PlanNode[] = [];
  const visit = (node: PlanNode) => {
    nodes.push(node);
    for (const child of node.Plans ?? []) visit(child);
  };
  for (const entry of explained as { Plan: PlanNode }[]) visit(entry.Plan);
  return nodes;
}

/** The plans of every resource list query, as PostgreSQL makes them (by default with sequential scans priced out). */
async function plansOf(
  read: (manager: EntityManager) => Promise<unknown>,
  { seqScansPricedOut = true } = {},
): Promise<string[]> {
  const queries: { sql: string; params: unknown[] }[] = [];
  const recording = {
    query: (sql: string, params: unknown[] = []) => {
      queries.push({ sql, params });
      return ctx.dataSource.query(sql, params);
    },
  } as unknown as EntityManager;
  await read(recording);
  expect(queries.length).toBeGreaterThan(0);
  return ctx.dataSource.transaction(async (tx) => {
    if (seqScansPricedOut) {
      // Tables this small let the planner pick by the moment's statistics; priced out, a sequential
      // scan or a sort is still chosen when no index can give the rows in order, which is what is checked.
      await tx.query('SET LOCAL enable_seqscan = off');
      await tx.query('SET LOCAL enable_sort = off');
    }
    const plans: string[] = [];
    for (const { sql, params } of queries) {
      const [row] = (await tx.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)) as { 'QUERY PLAN': unknown }[];
      plans.push(JSON.stringify(row!['QUERY PLAN']));
    }
    return plans;
  });
}

test('every resource list reads an index in its sort order: no sequential scan, no sort', async () => {
  const { key, team } = await ctx.newTeamKey();
  await createEnvironment(ctx, key, { name: 'env' });
  const [{ id: teamId }] = (await ctx.dataSource.query(`SELECT id FROM teams WHERE name = $1`, [team])) as [
    { id: string },
  ];
  const page = { limit: 10 };
  const after = { value: '2026-01-01T00:00:00.000000Z', key: '00000000-0000-7000-8000-000000000000' };
  const reads: [string, (m: EntityManager) => Promise<unknown>][] = [
    [
      'environments by name',
      (m) => listEnvironments(m, teamId, 'name', { limit: 10, after: { value: 'a', key: 'b' } }),
    ],
    ['environments by update', (m) => listEnvironments(m, teamId, 'last_updated', { limit: 10, after })],
    ['identities', (m) => listAgentIdentities(m, teamId, {}, { limit: 10, after })],
    ['identities of a factory', (m) => listAgentIdentities(m, teamId, { factoryUid: 'fac_x' }, page)],
    ['factories', (m) => listFactories(m, teamId, { limit: 10, after })],
    ['schedules', (m) => listSchedules(m, teamId, { limit: 10, after })],
    ['webhooks', (m) => listWebhooks(m, teamId, { limit: 10, after })],
    ['skills', (m) => listTeamSkills(m, teamId, {})],
    ['skills of a repository', (m) => listTeamSkills(m, teamId, { repository: 'Acme/Ops', includeMalformed: true })],
  ];
  for (const [what, read] of reads) {
    for (const plan of await plansOf(read)) {
      expect({ what, seqScan: plan.includes('"Seq Scan"') }).toEqual({ what, seqScan: false });
      // The skills list sorts what it found; the paged lists read their order from the index.
      if (!what.startsWith('skills')) expect({ what, sort: plan.includes('"Sort"') }).toEqual({ what, sort: false });
    }
  }
});

test('the ancestor_run_id list reads run_lineage by its key, and runs by theirs: no sequential scan', async () => {
  // A team with many runs, one of which has three descendants: what the planner must not walk
  // is the team's runs, looking each up in the lineage.
  const { key, team } = await ctx.newTeamKey();
  const [{ id: teamId }] = (await ctx.dataSource.query(`SELECT id FROM teams WHERE name = $1`, [team])) as [
    { id: string },
  ];
  const ancestor = await createRun(ctx, key, { prompt: 'the root' });
  await waitForState(ctx, key, ancestor, ['SUCCEEDED']);
  const copies = (await ctx.dataSource.query(
    `INSERT INTO runs
     SELECT (jsonb_populate_record(r, jsonb_build_object(
       'run_id', gen_random_uuid(), 'session_id', gen_random_uuid()::text,
       'created_at', r.created_at - n * interval '1 minute', 'updated_at', r.updated_at - n * interval '1 minute'))).*
       FROM runs r, generate_series(1, 5000) n WHERE r.run_id = $1
     RETURNING run_id`,
    [ancestor],
  )) as { run_id: string }[];
  const ids = copies.map((c) => c.run_id);
  await ctx.dataSource.query(
    `INSERT INTO run_lineage (ancestor_run_id, run_id, depth) VALUES ($1, $2, 1), ($1, $3, 1), ($1, $4, 2)`,
    [ancestor, ids[0], ids[1], ids[2]],
  );
  // The other runs are parents of one child each: a lineage table of thousands of rows.
  await ctx.dataSource.query(
    `INSERT INTO run_lineage (ancestor_run_id, run_id, depth)
     SELECT parent, child, 1 FROM unnest($1::uuid[], $2::uuid[]) AS t(parent, child)`,
    [ids.slice(4).filter((_, i) => i % 2 === 0), ids.slice(4).filter((_, i) => i % 2 === 1)],
  );
  await ctx.dataSource.query('ANALYZE runs, run_lineage');
  const listed = await listRuns(ctx.dataSource.manager, {
    teamId,
    filters: { ancestorRunId: ancestor },
    sortBy: 'created_at',
    sortOrder: 'asc',
    limit: 10,
  });
  expect(listed.runs.map((r) => r.runId).sort()).toEqual(ids.slice(0, 3).sort());
  for (const [sortBy, sortOrder] of [
    ['updated_at', 'desc'],
    ['created_at', 'asc'],
    ['title', 'asc'],
  ] as const) {
    const read = (m: EntityManager) =>
      listRuns(m, { teamId, filters: { ancestorRunId: ancestor }, sortBy, sortOrder, limit: 10 });
    // Planned as it is in use: the tables are large enough for the planner's own choice to tell.
    const [plan, ...more] = await plansOf(read, { seqScansPricedOut: false });
    expect(more).toEqual([]);
    const nodes = planNodes(JSON.parse(plan!) as unknown);
    const scans = nodes.filter((n) => typeof n['Relation Name'] === 'string');
    expect({
      sortBy,
      seqScans: scans.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']),
    }).toEqual({ sortBy, seqScans: [] });
    // run_lineage is read through its primary key by the ancestor (an index or bitmap index scan), not in full.
    const lineage = nodes.filter((n) => String(n['Index Name']).startsWith('run_lineage'));
    expect(lineage.length).toBeGreaterThan(0);
    for (const scan of lineage) {
      expect({ sortBy, index: scan['Index Name'], cond: scan['Index Cond'] }).toEqual({
        sortBy,
        index: 'run_lineage_pkey',
        cond: expect.stringMatching(/^\(?ancestor_run_id = /),
      });
    }
    // ... and runs by the run ids found there: never a walk through the team's runs.
    expect({ sortBy, runs: scans.filter((n) => n['Relation Name'] === 'runs').map((n) => n['Index Name']) }).toEqual({
      sortBy,
      runs: ['runs_pkey', 'runs_pkey'],
    });
  }
  // The copies are no one's runs: gone again, so that no later test of this database meets them.
  await ctx.dataSource.query(`DELETE FROM runs WHERE run_id = ANY($1::uuid[])`, [ids]);
});

test('the maintenance Schedule prunes idempotency records past 24 hours and keeps the others', async () => {
  const { uid } = await ctx.newTeamKey();
  const insert = (key: string, age: string) =>
    ctx.dataSource.query(
      `INSERT INTO idempotency_records (principal_uid, scope, key, request_hash, created_at)
       VALUES ($1, 'create-run', $2, 'h', now() - $3::interval)`,
      [uid, key, age],
    );
  await insert('expired-1', '25 hours');
  await insert('expired-2', '30 days');
  await insert('expired-3', '2 days');
  await insert('fresh', '23 hours');

  const schedule = ctx.client.schedule.getHandle(maintenanceScheduleId(ctx.config.temporal.taskQueue));
  const before = (await schedule.describe()).info.recentActions.length;
  await schedule.trigger();
  const described = await waitFor(
    () => schedule.describe(),
    (d) => d.info.recentActions.length > before,
    'the maintenance firing',
  );
  const firing = described.info.recentActions.at(-1)!.action;
  const result = (await ctx.client.workflow.getHandle(firing.workflow.workflowId).result()) as {
    idempotencyRecordsPruned: number;
  };
  await recordWorkflowReplayFixture(ctx, firing.workflow.workflowId, 'maintenance-prunes');
  // At least these three (other files' expired records may go in the same firing).
  expect(result.idempotencyRecordsPruned).toBeGreaterThanOrEqual(3);
  const left = (await ctx.dataSource.query(`SELECT key FROM idempotency_records WHERE principal_uid = $1`, [uid])) as {
    key: string;
  }[];
  expect(left.map((r) => r.key)).toEqual(['fresh']);
});
