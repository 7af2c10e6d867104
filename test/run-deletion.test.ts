import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../core/logger';
import { createRunDeletion } from '../services/runs/run-deletion';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { createEnvironment } from './helpers/environments';
import { createFactory } from './helpers/factories';
import { teamsCli, operatorCommand } from './helpers/operator-commands';
import { WebhookReceiver } from './helpers/webhook-receiver';
import { ScheduleNotFoundError } from '@temporalio/client';
import { KEPT_TABLES, SHARED_TABLES, TEAM_TABLES } from '../db/team-data-tables';
import { countTeamRows } from '../db/team-deletion';
import { largestTeamsStoredBytes, teamStoredBytes } from '../db/team-storage-reads';
import { parsePrometheusText, sampleValue } from './helpers/prometheus-text';
import { createApiKeyService } from '../services/keys/api-key-service';
import { temporalScheduleId } from '../workflows/schedule-contract';

/**
 * `DELETE /agent/runs/{runId}` and retention (RUN_RETENTION_DAYS): a run goes with its
 * descendants and everything they left, its rows, its download URLs and its workflow histories;
 * a live one is 409 and nothing goes. `npm run teams -- delete`: a team with everything it has.
 */

let ctx: TestContext;
const receiver = new WebhookReceiver();
let receiverUrl: string;
beforeAll(async () => {
  // Loopback webhook receivers are private addresses: only the operator's allow-list opens them.
  ctx = await createTestContext({ env: { OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1' } });
  receiverUrl = await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await ctx?.close();
});

jest.setTimeout(180_000);

/** A run of one step that writes a file (a checkpoint with it), then an answer. */
function scriptWrite(marker: string) {
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: `echo ${marker} > out.txt` } }] }
      : { text: `done ${marker}` },
  );
}

/** Every row of the service that names one of the runs. */
async function rowsOf(runIds: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['runs', 'run_events', 'followups', 'checkpoints', 'blobs', 'run_lineage', 'run_workspaces']) {
    const [row] = (await ctx.dataSource.query(
      `SELECT count(*)::int AS n FROM ${table} WHERE run_id = ANY($1::uuid[])`,
      [runIds],
    )) as { n: number }[];
    counts[table] = row!.n;
  }
  return counts;
}

async function workflowExecutions(runId: string): Promise<number> {
  let n = 0;
  for await (const execution of ctx.client.workflow.list({ query: `WorkflowId = '${runWorkflowId(runId)}'` })) {
    void execution;
    n++;
  }
  return n;
}

/** Temporal deletes an execution as its close is processed, and its visibility follows. */
async function historiesGone(runId: string, timeoutMs = 30_000): Promise<void> {
  const described = () =>
    ctx.client.workflow
      .getHandle(runWorkflowId(runId))
      .describe()
      .then(
        (d) => d.status.name,
        (e: Error) => e.constructor.name,
      );
  await waitFor(described, (d) => d === 'WorkflowNotFoundError', `the history of ${runId} to be deleted`, timeoutMs);
  await waitFor(
    () => workflowExecutions(runId),
    (n) => n === 0,
    `no execution of ${runId} to be listed`,
    timeoutMs,
  );
}

test('an admin deletes an ended run with its descendant and everything they left; a member cannot, another team sees no run', async () => {
  const team = uniqueName('deleting');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const member = await ctx.newTeamKey('personal', team, 'member');
  const stranger = await ctx.newTeamKey('personal', uniqueName('other'), 'admin');
  const marker = uniqueName('deleted');
  scriptWrite(marker);
  const runId = await createRun(ctx, admin.key, { prompt: `Work ${marker}` });
  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);
  const childMarker = uniqueName('deleted-child');
  scriptWrite(childMarker);
  const childId = await createRun(ctx, admin.key, { prompt: `Work ${childMarker}`, parent_run_id: runId });
  await waitForState(ctx, admin.key, childId, ['SUCCEEDED']);
  // A follow-up: a second turn, still within the run's idle window (its workflow open).
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(admin.key))
    .send({ message: `Again ${marker}` });
  expect(followup.status).toBe(200);
  await waitForState(ctx, admin.key, runId, ['SUCCEEDED']);

  const checkpoints = await ctx.api.get(`/api/v1/agent/runs/${runId}/checkpoints`).set(auth(admin.key));
  const checkpointId = (checkpoints.body.checkpoints as { checkpoint_id: string }[]).at(-1)!.checkpoint_id;
  const item = await ctx.api.get(`/api/v1/agent/runs/${runId}/checkpoints/${checkpointId}`).set(auth(admin.key));
  const downloadUrl = item.body.download_url as string;
  expect((await fetch(downloadUrl)).status).toBe(200);
  const before = await rowsOf([runId, childId]);
  expect(before).toMatchObject({ runs: 2, followups: 1 });
  for (const table of ['run_events', 'checkpoints']) expect(before[table]).toBeGreaterThan(0);
  expect(await workflowExecutions(runId)).toBeGreaterThan(0);

  // A member key: 403; another team's admin: 404. Nothing goes.
  const byMember = await ctx.api.delete(`/api/v1/agent/runs/${runId}`).set(auth(member.key));
  expect(byMember.status).toBe(403);
  expect(byMember.body.detail).toContain('admin');
  expect((await ctx.api.delete(`/api/v1/agent/runs/${runId}`).set(auth(stranger.key))).status).toBe(404);
  expect(await rowsOf([runId, childId])).toEqual(before);

  const deleted = await ctx.api.delete(`/api/v1/agent/runs/${runId}`).set(auth(admin.key));
  expect(deleted.status).toBe(204);
  for (const id of [runId, childId])
    expect((await ctx.api.get(`/api/v1/agent/runs/${id}`).set(auth(admin.key))).status).toBe(404);
  expect((await fetch(downloadUrl)).status).toBe(404);
  expect(await rowsOf([runId, childId])).toEqual({
    runs: 0,
    run_events: 0,
    followups: 0,
    checkpoints: 0,
    blobs: 0,
    run_lineage: 0,
    run_workspaces: 0,
  });
  for (const id of [runId, childId]) await historiesGone(id);
  // Gone: a follow-up finds no run, and deleting again is 404.
  const late = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(admin.key))
    .send({ message: 'hello?' });
  expect(late.status).toBe(404);
  expect((await ctx.api.delete(`/api/v1/agent/runs/${runId}`).set(auth(admin.key))).status).toBe(404);
});

test('a live run, or a run with a live descendant, is 409 and nothing is deleted', async () => {
  const { key } = await ctx.newTeamKey('personal', uniqueName('live'), 'admin');
  const marker = uniqueName('waiting');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'run_command', arguments: { command: 'touch running; while [ ! -f go ]; do sleep 0.1; done' } },
          ],
        }
      : { text: `done ${marker}` },
  );
  const parentMarker = uniqueName('parent');
  scriptWrite(parentMarker);
  const parentId = await createRun(ctx, key, { prompt: `Work ${parentMarker}` });
  await waitForState(ctx, key, parentId, ['SUCCEEDED']);
  const childId = await createRun(ctx, key, { prompt: `Wait ${marker}`, parent_run_id: parentId });
  await waitForState(ctx, key, childId, ['INPROGRESS']);

  for (const id of [childId, parentId]) {
    const refused = await ctx.api.delete(`/api/v1/agent/runs/${id}`).set(auth(key));
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain(childId);
    expect(refused.body.detail).toContain('Cancel it first');
  }
  expect((await rowsOf([parentId, childId])).runs).toBe(2);

  const workspace = path.join(ctx.config.workspace.dir, childId);
  // The command itself says it runs: the workspace directory exists before its files are in place.
  await waitFor(async () => existsSync(path.join(workspace, 'running')), Boolean, 'the waiting command to run', 60_000);
  writeFileSync(path.join(workspace, 'go'), '');
  await waitForState(ctx, key, childId, ['SUCCEEDED']);
  expect((await ctx.api.delete(`/api/v1/agent/runs/${parentId}`).set(auth(key))).status).toBe(204);
  expect((await rowsOf([parentId, childId])).runs).toBe(0);
});

test('retention deletes the runs that ended before it, in batches, and keeps a tree with a descendant that ended since', async () => {
  const { key } = await ctx.newTeamKey('personal', uniqueName('retention'), 'admin');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const marker = uniqueName(`old-${i}`);
    scriptWrite(marker);
    ids.push(await createRun(ctx, key, { prompt: `Work ${marker}` }));
  }
  for (const id of ids) await waitForState(ctx, key, id, ['SUCCEEDED']);
  const [oldest, older, kept] = ids as [string, string, string];
  const recentMarker = uniqueName('recent-child');
  scriptWrite(recentMarker);
  const recentChild = await createRun(ctx, key, { prompt: `Work ${recentMarker}`, parent_run_id: kept });
  await waitForState(ctx, key, recentChild, ['SUCCEEDED']);
  // Ended 40 and 35 days ago; `kept` too, but its child ended now.
  await ctx.dataSource.query(
    `UPDATE runs SET ended_at = now() - make_interval(days => d) FROM unnest($1::uuid[], $2::int[]) AS x(id, d) WHERE run_id = x.id`,
    [
      [oldest, older, kept],
      [40, 35, 40],
    ],
  );
  const deletion = createRunDeletion({
    dataSource: ctx.dataSource,
    temporal: ctx.client,
    logger: createLogger('error', 'test'),
    rpcTimeoutMs: 10_000,
  });
  // Other files' runs share the database: only this test's are counted.
  const mine = async () => (await rowsOf([...ids, recentChild])).runs;
  const first = await deletion.deleteExpiredRuns(30, 1);
  expect(first).toEqual({ deleted: 1, more: true });
  expect((await rowsOf([oldest])).runs).toBe(0);
  expect(await mine()).toBe(3);
  for (let more = true; more;) more = (await deletion.deleteExpiredRuns(30, 50)).more;
  expect((await rowsOf([older])).runs).toBe(0);
  expect((await rowsOf([kept, recentChild])).runs).toBe(2);
  await historiesGone(older);
  // Each run retention deleted is on record, by the service, in its team's audit log.
  const events = (await ctx.dataSource.query(
    `SELECT resource_id, actor_type, actor_uid, details->>'reason' AS reason FROM audit_events
      WHERE action = 'run.delete' AND resource_id = ANY($1::text[]) ORDER BY seq`,
    [[oldest, older, kept, recentChild]],
  )) as { resource_id: string; actor_type: string; actor_uid: string; reason: string }[];
  expect(events).toEqual([
    { resource_id: oldest, actor_type: 'service', actor_uid: 'retention', reason: 'retention' },
    { resource_id: older, actor_type: 'service', actor_uid: 'retention', reason: 'retention' },
  ]);
});

/** A team with something in every kind of thing a team has: keys (one rotated), a webhook, an environment, a secret, a factory with an agent and a task, a schedule, and an ended run. */
async function teamWithEverything(label: string) {
  const name = uniqueName(label);
  const admin = await ctx.newTeamKey('personal', name, 'admin');
  const member = await ctx.newTeamKey('personal', name, 'member');
  // A rotated key: the old one names the new (api_keys.replaced_by).
  await createApiKeyService({ config: ctx.config, dataSource: ctx.dataSource }).rotate(member.id, {});
  const post = async (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await ctx.api.post(`/api/v1${path}`).set(auth(admin.key)).set(headers).send(body);
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Record<string, string>;
  };
  await post('/agent/webhooks', { url: receiverUrl, event_types: ['run.state_changed'] });
  await createEnvironment(ctx, admin.key, { name: 'env' });
  await post('/agent/secrets', { name: 'openai', value: `sk-proj-${'x'.repeat(40)}` });
  const factory = await createFactory(ctx, admin.key, [{ type: 'IMPLEMENT' }]);
  const schedule = await post('/agent/schedules', { name: 'nightly', cron_schedule: '0 9 * * *', prompt: 'Nightly' });
  const marker = uniqueName(`${label}-run`);
  scriptWrite(marker);
  const run = await post('/agent/runs', { prompt: `Work ${marker}` }, { 'Idempotency-Key': uniqueName('once') });
  await waitForState(ctx, admin.key, run.run_id!, ['SUCCEEDED']);
  const conversation = (await ctx.api.get(`/api/v1/agent/runs/${run.run_id}`).set(auth(admin.key))).body as {
    conversation_id: string;
  };
  await post(`/factory/${factory.uid}/tasks`, { conversation_id: conversation.conversation_id, title: 'Fix it' });
  const [team] = (await ctx.dataSource.query(`SELECT id FROM teams WHERE name = $1`, [name])) as { id: string }[];
  return { id: team!.id, name, admin: admin.key, scheduleId: schedule.id!, runId: run.run_id! };
}

/** The team's rows but those its live run still adds to (its transcript, checkpoints, workspace). */
const settled = (rows: Record<string, number>) =>
  Object.fromEntries(
    TEAM_TABLES.filter((t) => t.deletedBy === 'team' || t.table === 'runs').map((t) => [t.table, rows[t.table]]),
  );
const settledRows = async (teamId: string) => settled(await countTeamRows(ctx.dataSource.manager, teamId));

const scheduleExists = (scheduleId: string) =>
  ctx.client.schedule
    .getHandle(temporalScheduleId(scheduleId))
    .describe()
    .then(
      () => true,
      (err: unknown) => {
        if (err instanceof ScheduleNotFoundError) return false;
        throw err;
      },
    );

test('npm run teams -- delete: a dry run changes nothing, live runs refuse it, --cancel-live deletes everything of the team and nothing of another, and a rerun goes on where a cut-off one stopped', async () => {
  const a = await teamWithEverything('doomed');
  const b = await teamWithEverything('kept');
  const marker = uniqueName('live');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'sleep 600' } }] }
      : { text: `done ${marker}` },
  );
  const liveRun = await createRun(ctx, a.admin, { prompt: `Wait ${marker}` });
  await waitForState(ctx, a.admin, liveRun, ['INPROGRESS']);
  const aBefore = await countTeamRows(ctx.dataSource.manager, a.id);
  const bBefore = await countTeamRows(ctx.dataSource.manager, b.id);
  for (const table of [
    'runs',
    'run_events',
    'checkpoints',
    'webhook_deliveries',
    'webhooks',
    'schedules',
    'factory_tasks',
    'agent_identities',
    'factories',
    'environments',
    'managed_secrets',
    'idempotency_records',
    'api_keys',
    'principals',
    'teams',
  ])
    expect([table, aBefore[table]]).toEqual([table, expect.any(Number)]);
  expect(
    Object.entries(aBefore)
      .filter(([, n]) => n === 0)
      .map(([t]) => t),
  ).not.toContain('webhook_deliveries');

  // Its stored bytes as the storage metric reads them, and the metric served.
  const stored = await largestTeamsStoredBytes(ctx.dataSource.manager, 10_000);
  expect(stored.largest.find((t) => t.teamId === a.id)).toEqual({
    teamId: a.id,
    team: a.name,
    bytes: await teamStoredBytes(ctx.dataSource.manager, a.id),
  });
  expect(stored.largest.find((t) => t.teamId === a.id)!.bytes).toBeGreaterThan(0);
  expect(stored.othersBytes).toBe(0);
  const scrape = async () => parsePrometheusText((await ctx.api.get('/metrics')).text);
  const served = await waitFor(scrape, (m) => m.types.has('agent_runs_team_storage_bytes'), 'the storage metric');
  expect(sampleValue(served, 'agent_runs_runs_ended_oldest_seconds')).toBeGreaterThan(0);

  // A dry run, by name: counts, the live run, and nothing changed.
  const dry = await teamsCli(ctx, 'delete', a.name);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toContain(`Team "${a.name}" (${a.id})`);
  expect(dry.stdout).toMatch(new RegExp(`^  runs +${aBefore.runs}$`, 'm'));
  expect(dry.stdout).toContain(liveRun);
  expect(dry.stdout).toContain('Nothing was changed');
  // --yes with a live run: refused, naming it, nothing changed.
  const refused = await teamsCli(ctx, 'delete', a.id, '--yes');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(liveRun);
  expect(refused.stderr).toContain('--cancel-live');
  expect(await settledRows(a.id)).toEqual(settled(aBefore));
  expect(await scheduleExists(a.scheduleId)).toBe(true);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(a.admin))).status).toBe(200);

  // Cut off once it has begun cancelling: its keys are revoked and its schedules gone already.
  await operatorCommand(ctx, 'bin/teams.ts', ['delete', a.id, '--yes', '--cancel-live'], {
    started: (child) =>
      child.stdout!.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('Cancelling')) child.kill('SIGKILL');
      }),
  });
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(a.admin))).status).toBe(401);
  const rerun = await teamsCli(ctx, 'delete', a.id, '--yes', '--cancel-live');
  expect([rerun.code, rerun.stderr]).toEqual([0, '']);
  expect(rerun.stdout).toContain(`Deleted team "${a.name}"`);
  // Its audit log outlives it, and records who deleted it.
  const recorded = (await ctx.dataSource.query(
    `SELECT actor_type, details->>'team' AS team FROM audit_events WHERE team_id = $1 AND action = 'team.delete'`,
    [a.id],
  )) as { actor_type: string; team: string }[];
  expect(recorded).toEqual([{ actor_type: 'operator', team: a.name }]);

  expect(Object.values(await countTeamRows(ctx.dataSource.manager, a.id)).every((n) => n === 0)).toBe(true);
  expect(await rowsWithTeamId(a.id)).toEqual({});
  expect(await scheduleExists(a.scheduleId)).toBe(false);
  await historiesGone(a.runId);
  // The cancelled run's workflow closed just before it was deleted: Temporal deletes a closed
  // execution once its close is recorded in visibility, which can take it a minute or two.
  await historiesGone(liveRun, 180_000);
  // The other team: all there, its key and schedule working.
  expect(await countTeamRows(ctx.dataSource.manager, b.id)).toEqual(bBefore);
  expect(await scheduleExists(b.scheduleId)).toBe(true);
  expect((await ctx.api.get(`/api/v1/agent/runs/${b.runId}`).set(auth(b.admin))).status).toBe(200);

  // Once more: nothing left to delete.
  const again = await teamsCli(ctx, 'delete', a.id, '--yes');
  expect([again.code, again.stdout]).toEqual([0, `No team ${a.id}: nothing to delete.\n`]);
}, 400_000);

/** Rows that name the team in any table with a team_id column, by table (none: {}). */
async function rowsWithTeamId(teamId: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const table of await tablesWithColumn('team_id')) {
    if (table in KEPT_TABLES) continue;
    const [row] = (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE team_id = $1`, [
      teamId,
    ])) as { n: number }[];
    if (row!.n) found[table] = row!.n;
  }
  return found;
}

async function tablesWithColumn(column: string): Promise<string[]> {
  const rows = (await ctx.dataSource.query(
    `SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = $1`,
    [column],
  )) as { table_name: string }[];
  return rows.map((r) => r.table_name);
}

test("every table is a team's data that the team deletion deletes, or named as shared: a new table fails this until it is one or the other", async () => {
  const tables = (
    (await ctx.dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    )) as { table_name: string }[]
  ).map((r) => r.table_name);
  const teamTables = TEAM_TABLES.map((t) => t.table);
  expect(new Set(teamTables).size).toBe(teamTables.length);
  expect(teamTables.filter((t) => t in SHARED_TABLES)).toEqual([]);
  expect([...teamTables, ...Object.keys(SHARED_TABLES), ...Object.keys(KEPT_TABLES)].sort()).toEqual(
    [...tables].sort(),
  );
  // What names a team, a run or a principal, or refers to a table that does, is a team's data.
  const named = new Set(
    (await Promise.all(['team_id', 'run_id', 'principal_uid'].map(tablesWithColumn))).flat().concat('teams'),
  );
  const references = (await ctx.dataSource.query(
    `SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent FROM pg_constraint WHERE contype = 'f'`,
  )) as { child: string; parent: string }[];
  for (let grew = true; grew;) {
    grew = false;
    for (const { child, parent } of references)
      if (named.has(parent) && !named.has(child)) grew = Boolean(named.add(child));
  }
  expect([...named].filter((t) => !teamTables.includes(t) && !(t in KEPT_TABLES))).toEqual([]);
});
