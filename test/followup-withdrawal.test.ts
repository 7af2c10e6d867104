import { lockRun } from '../db/run-store';
import { recordFollowup, withdrawFollowup } from '../db/followups';
import { withdrawUnstartedRun } from '../db/run-creation';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * What a create or follow-up takes back when its Temporal call fails, against the real
 * database: only what nobody has picked up. (The outage tests drive the same path end to end.)
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

async function endedRun(key: string): Promise<string> {
  const marker = uniqueName('withdraw');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const runId = await createRun(ctx, key, { prompt: `Withdraw ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  return runId;
}

const record = (runId: string) =>
  ctx.dataSource.transaction(async (tx) => {
    const locked = (await lockRun(tx, runId))!;
    return recordFollowup(tx, { runId, message: 'm', mode: 'normal', creatorUid: 'usr_x', locked }, true);
  });

test('an undelivered follow-up is taken back and the run is as it was before it reopened it', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await endedRun(key);
  const before = await getRun(ctx, key, runId);
  const followup = await record(runId);
  expect((await getRun(ctx, key, runId)).state).toBe('QUEUED');
  expect(await ctx.dataSource.transaction((tx) => withdrawFollowup(tx, runId, followup))).toBe(true);
  expect(await getRun(ctx, key, runId)).toEqual(before);
  expect(await ctx.dataSource.query(`SELECT 1 FROM followups WHERE run_id = $1`, [runId])).toEqual([]);
});

test('a follow-up already delivered is not taken back: the run has it', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await endedRun(key);
  const followup = await record(runId);
  await ctx.dataSource.query(`UPDATE followups SET delivered_at = now() WHERE id = $1`, [followup.id]);
  expect(await ctx.dataSource.transaction((tx) => withdrawFollowup(tx, runId, followup))).toBe(false);
  expect(await ctx.dataSource.query(`SELECT 1 FROM followups WHERE run_id = $1`, [runId])).toHaveLength(1);
});

test('a run its workflow has started is not withdrawn', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await endedRun(key);
  expect(await ctx.dataSource.transaction((tx) => withdrawUnstartedRun(tx, runId))).toBe(false);
  expect((await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth(key))).status).toBe(200);
});
