import { resolveSecretsKeyring } from '../infra/secrets-key';
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomBytes } from 'node:crypto';
import { createMaintenanceActivities } from '../activities/maintenance-activities';
import { createLogger } from '../core/logger';
import { contentKey } from '../infra/object-store/object-store';
import { collectUnreferencedObjects, type CollectionResult } from '../services/objects/object-collection';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * The object collector removes what no row names after its grace period, and nothing a row
 * names; TEAM_MAX_STORED_BYTES refuses new runs and forks, and stops checkpoints, past the cap.
 */

let ctx: TestContext;
let capped: TestContext;
beforeAll(async () => {
  [ctx, capped] = await Promise.all([createTestContext(), createTestContext({ env: { TEAM_MAX_STORED_BYTES: '1' } })]);
});
afterAll(async () => {
  await Promise.all([ctx?.close(), capped?.close()]);
});

jest.setTimeout(180_000);

const collect = () =>
  collectUnreferencedObjects(ctx.dataSource, ctx.objectStore, { graceSeconds: 3600, budgetMs: 60_000 });

test('an object no row names goes once two passes a grace period apart found it so; named ones stay', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('collect');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'echo kept > kept.txt' } }] }
      : { text: `done ${marker}` },
  );
  const runId = await createRun(ctx, key, { prompt: `Keep ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const named = (
    (await ctx.dataSource.query(
      `SELECT o.object_key FROM checkpoint_objects o JOIN checkpoints c USING (checkpoint_id) WHERE c.run_id = $1`,
      [runId],
    )) as { object_key: string }[]
  ).map((r) => r.object_key);
  expect(named.length).toBeGreaterThan(0);

  const orphan = randomBytes(64);
  const orphanKey = contentKey(orphan);
  const savedBytes = randomBytes(64);
  const savedKey = contentKey(savedBytes);
  await ctx.objectStore.put(orphanKey, orphan);
  await ctx.objectStore.put(savedKey, savedBytes);

  // First sighting: marked, not deleted (it may be about to be named).
  const first = await collect();
  expect(first.partitions).toBe(256);
  expect(await ctx.objectStore.has(orphanKey)).toBe(true);
  // A grace period later, as far as the marks can tell; meanwhile a checkpoint names one of them.
  await ctx.dataSource.query(
    `UPDATE unreferenced_objects SET seen_at = now() - interval '2 hours' WHERE object_key = ANY($1::text[])`,
    [[orphanKey, savedKey]],
  );
  const [checkpoint] = (await ctx.dataSource.query(`SELECT checkpoint_id FROM checkpoints WHERE run_id = $1 LIMIT 1`, [
    runId,
  ])) as { checkpoint_id: string }[];
  await ctx.dataSource.query(
    `INSERT INTO checkpoint_objects (checkpoint_id, object_key, size_bytes) VALUES ($1, $2, 64)`,
    [checkpoint!.checkpoint_id, savedKey],
  );

  const second = await collect();
  expect(await ctx.objectStore.has(orphanKey)).toBe(false);
  expect(await ctx.objectStore.has(savedKey)).toBe(true);
  expect(second.deleted).toBeGreaterThanOrEqual(1);
  for (const k of named) expect(await ctx.objectStore.has(k)).toBe(true);
  // A whole cycle ended: the store's size is known.
  expect(second.storeObjects).toBeGreaterThan(0);
  expect(second.storeBytes).toBeGreaterThan(0);
  const marks = (await ctx.dataSource.query(
    `SELECT object_key FROM unreferenced_objects WHERE object_key = ANY($1::text[])`,
    [[orphanKey, savedKey]],
  )) as unknown[];
  expect(marks).toEqual([]);
});

test('past TEAM_MAX_STORED_BYTES a team gets no new run or fork and its runs take no more checkpoints; another team is not held back', async () => {
  const { key } = await capped.newTeamKey();
  const marker = uniqueName('full');
  capped.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: 'echo more > more.txt' } }] }
      : { text: `done ${marker}` },
  );
  const runId = await createRun(capped, key, { prompt: `Fill ${marker}` });
  await waitForState(capped, key, runId, ['SUCCEEDED']);
  // Its workspace as provisioned was stored (the team had nothing); the step's files were not.
  const steps = (await capped.dataSource.query(`SELECT step FROM checkpoints WHERE run_id = $1 ORDER BY step`, [
    runId,
  ])) as { step: number }[];
  expect(steps.map((s) => s.step)).toEqual([0]);
  const notices = (await transcript(capped, runId))
    .filter((e) => e.kind === 'notice')
    .map((e) => String(e.payload.message));
  expect(notices.join('\n')).toContain('No checkpoint of this run');

  const refused = await capped.api.post('/api/v1/agent/runs').set(auth(key)).send({ prompt: 'one more' });
  expect(refused.status).toBe(400);
  expect(refused.body.error_code).toBe('budget_exceeded');
  expect(refused.body.detail).toContain('TEAM_MAX_STORED_BYTES=1');
  const fork = await capped.api.post(`/api/v1/agent/runs/${runId}/fork`).set(auth(key)).send({ prompt: 'again' });
  expect(fork.status).toBe(400);
  expect(fork.body.error_code).toBe('budget_exceeded');

  const other = await capped.newTeamKey();
  const allowed = await capped.api
    .post('/api/v1/agent/runs')
    .set(auth(other.key))
    .send({ prompt: `Other ${uniqueName('o')}` });
  expect(allowed.status).toBe(201);
});

test('in restore mode the maintenance deletes no expired run and collects no object; without it, it does both', async () => {
  const { key } = await ctx.newTeamKey();
  const runId = await createRun(ctx, key, {
    prompt: `Old ${uniqueName('restore-maintenance')}`,
    config: { idle_timeout_minutes: 0 },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  // Ended a century ago (no other file's run is that old) and an object unnamed for two days: both due.
  await ctx.dataSource.query(`UPDATE runs SET ended_at = now() - interval '100 years' WHERE run_id = $1`, [runId]);
  const orphan = randomBytes(64);
  const orphanKey = contentKey(orphan);
  await ctx.objectStore.put(orphanKey, orphan);
  await ctx.dataSource.query(
    `INSERT INTO unreferenced_objects (object_key, seen_at) VALUES ($1, now() - interval '2 days')`,
    [orphanKey],
  );
  const maintenance = (restoreMode: boolean) =>
    createMaintenanceActivities({
      dataSource: ctx.dataSource,
      objectStore: ctx.objectStore,
      secretsKeyring: resolveSecretsKeyring(ctx.config),
      config: { ...ctx.config, restoreMode, runRetentionDays: 36_500 },
      temporal: ctx.client,
      logger: createLogger('error', 'test'),
    });
  const runExists = async () =>
    ((await ctx.dataSource.query(`SELECT 1 FROM runs WHERE run_id = $1`, [runId])) as unknown[]).length === 1;
  const env = new MockActivityEnvironment();

  const paused = maintenance(true);
  expect(await env.run(paused.deleteExpiredRuns)).toEqual({ deleted: 0, more: false });
  expect(await env.run(paused.collectUnreferencedObjects)).toMatchObject({ partitions: 0, deleted: 0 });
  expect([await runExists(), await ctx.objectStore.has(orphanKey)]).toEqual([true, true]);

  const acting = maintenance(false);
  expect(await env.run(acting.deleteExpiredRuns)).toEqual({ deleted: 1, more: false });
  const collected = (await env.run(acting.collectUnreferencedObjects)) as CollectionResult;
  expect(collected.deleted).toBeGreaterThanOrEqual(1);
  expect([await runExists(), await ctx.objectStore.has(orphanKey)]).toEqual([false, false]);
});
