import type { ActivityDeps } from '../activities/deps';
import { createRunStoreActivities } from '../activities/run-store-activities';
import { createLogger } from '../core/logger';
import { isAllowedMove, RUN_STATES } from '../core/run-state';
import { applyTransition, lockRun, recordCancelRequest } from '../db/run-store';
import { insertRunCopy } from './helpers/run-copies';
import { recordFollowup, withdrawFollowup } from '../db/followups';
import { withdrawUnstartedRun } from '../db/run-creation';
import { auth, createRun, getRun, storedRun, waitForState } from './helpers/runs';
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
  expect(storedRun(await getRun(ctx, key, runId))).toEqual(storedRun(before));
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

test('a cancel recorded again after a follow-up reopened the run leaves the new turn and its follow-up alone', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await insertRunCopy(ctx.dataSource, await endedRun(key), { state: 'INPROGRESS', turn: 1 });
  const store = createRunStoreActivities({
    dataSource: ctx.dataSource,
    config: ctx.config,
    temporal: ctx.client,
    logger: createLogger('error', 'test'),
  } as ActivityDeps);
  await ctx.dataSource.transaction(async (tx) => {
    await lockRun(tx, runId);
    await recordCancelRequest(tx, runId, 'tester (usr_tester)');
  });
  // The workflow records the cancel of the turn it was on...
  expect(await store.recordCancelled({ runId, turn: 1 })).toEqual({ applied: true, followupAfterCancel: false });
  // ...a follow-up sent after the cancel reopens the run in turn 2 (POST /followups)...
  await record(runId);
  // ...and the recording runs again: Temporal retries a local activity whose result it lost.
  expect(await store.recordCancelled({ runId, turn: 1 })).toEqual({ applied: false, followupAfterCancel: true });
  const [run] = (await ctx.dataSource.query(`SELECT state, turn FROM runs WHERE run_id = $1`, [runId])) as {
    state: string;
    turn: number;
  }[];
  expect(run).toEqual({ state: 'QUEUED', turn: 2 });
  expect(
    await ctx.dataSource.query(`SELECT seq FROM followups WHERE run_id = $1 AND delivered_at IS NULL`, [runId]),
  ).toEqual([{ seq: 1 }]);
});

test('the database moves a run forward exactly as core/run-state.ts allows, for every pair of states', async () => {
  const { key } = await ctx.newTeamKey();
  const template = await endedRun(key);
  const outcomes: string[] = [];
  const expected: string[] = [];
  for (const from of RUN_STATES) {
    for (const to of RUN_STATES) {
      const runId = await insertRunCopy(ctx.dataSource, template, { state: from, turn: 1 });
      const applied = await ctx.dataSource.transaction((tx) => applyTransition(tx, { runId, turn: 1, state: to }));
      const [row] = (await ctx.dataSource.query(`SELECT state FROM runs WHERE run_id = $1`, [runId])) as {
        state: string;
      }[];
      outcomes.push(`${from}->${to}: ${applied ? 'applied' : 'refused'} ${row!.state}`);
      expected.push(`${from}->${to}: ${isAllowedMove(from, to, 'forward') ? `applied ${to}` : `refused ${from}`}`);
    }
  }
  expect(outcomes).toEqual(expected);
});
