import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../core/logger';
import { createRunDeletion } from '../services/runs/run-deletion';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * `DELETE /agent/runs/{runId}` and retention (RUN_RETENTION_DAYS): a run goes with its
 * descendants and everything they left, its rows, its download URLs and its workflow histories;
 * a live one is 409 and nothing goes.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
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
async function historiesGone(runId: string): Promise<void> {
  const described = () =>
    ctx.client.workflow
      .getHandle(runWorkflowId(runId))
      .describe()
      .then(
        (d) => d.status.name,
        (e: Error) => e.constructor.name,
      );
  await waitFor(described, (d) => d === 'WorkflowNotFoundError', `the history of ${runId} to be deleted`, 30_000);
  await waitFor(
    () => workflowExecutions(runId),
    (n) => n === 0,
    `no execution of ${runId} to be listed`,
    30_000,
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
          toolCalls: [{ name: 'run_command', arguments: { command: 'while [ ! -f go ]; do sleep 0.1; done' } }],
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
  await waitFor(async () => existsSync(workspace), Boolean, 'the waiting run to have its workspace');
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
});
