import { existsSync } from 'node:fs';
import path from 'node:path';
import { startReconciler } from '../api/reconciler';
import { createLogger } from '../core/logger';
import { restoreModePasses, type PausedInRestoreMode } from '../core/metrics';
import { deleteRunRows } from '../db/run-deletion';
import { checkConsistency } from '../services/restore/consistency-check';
import { insertRunCopy } from './helpers/run-copies';
import { backdateRuns } from './helpers/quiet-runs';
import { restoreCli } from './helpers/restore-cli';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  // Sweeps only when a test asks for one (and at the worker's start).
  ctx = await createTestContext({ env: { WORKSPACE_SWEEP_INTERVAL_SECONDS: '86400' } });
});
afterAll(async () => {
  await ctx?.close();
});

/** This file's runs look quiet for an hour (backdateRuns); those of files running beside it do not. */
const QUIET_HOURS = 1;

function reconciler(options: { restoreMode?: boolean } = {}) {
  // One pass decides at once; its own timer never fires in a test.
  return startReconciler({
    dataSource: ctx.dataSource,
    temporal: ctx.client,
    logger: createLogger('error', 'test'),
    intervalSeconds: 3600,
    quietSeconds: (QUIET_HOURS * 3600) / 2,
    ...options,
  });
}

const makeQuiet = (...runIds: string[]) => backdateRuns(ctx.dataSource, runIds, QUIET_HOURS);

test('a run whose workflow an operator terminated is recorded ERROR saying so, and a follow-up starts it again', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('terminated');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => (call === 1 ? { hold: held.promise } : { text: 'back again' }));
  const runId = await createRun(ctx, key, { prompt: `Terminate me ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await ctx.client.workflow.getHandle(runWorkflowId(runId)).terminate('operator cleaning up');
  expect((await getRun(ctx, key, runId)).state).toBe('INPROGRESS');
  await makeQuiet(runId);

  const r = reconciler();
  try {
    expect(await r.runOnce()).toContain(runId);
    // Running runs are left alone, and a second pass changes nothing.
    expect(await r.runOnce()).not.toContain(runId);
  } finally {
    await r.stop();
    held.release({ text: 'too late' });
  }
  const run = await getRun(ctx, key, runId);
  expect(run.state).toBe('ERROR');
  expect(run.status_message).toMatchObject({ error_code: 'internal_error', retryable: true });
  expect((run.status_message as { message: string }).message).toMatch(/was terminated/);

  await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: 'carry on' }).expect(200);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
});

test('a live run is not touched by the reconciler', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('alive');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: held.promise }));
  const runId = await createRun(ctx, key, { prompt: `Alive ${marker}` });
  await ctx.model.waitForCalls(marker, 1);
  await makeQuiet(runId);
  const r = reconciler();
  try {
    expect(await r.runOnce()).not.toContain(runId);
  } finally {
    await r.stop();
  }
  held.release({ text: 'fine' });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
});

test('a run whose workflow never started (its create was answered 503) is removed; one that started is recorded ERROR', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const marker = uniqueName('orphan');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const template = await createRun(ctx, key, { prompt: `Template ${marker}` });
  await waitForState(ctx, key, template, ['SUCCEEDED']);
  // Rows as a failed create and a lost workflow leave them: copies of a real run, without a workflow.
  const copy = (overrides: Record<string, unknown>) => insertRunCopy(ctx.dataSource, template, overrides);
  const neverStarted = await copy({ state: 'QUEUED', turn: 1, started_at: null });
  const lost = await copy({ state: 'INPROGRESS', turn: 1 });
  await makeQuiet(neverStarted, lost);
  await ctx.dataSource.query(
    `INSERT INTO idempotency_records (principal_uid, scope, key, request_hash, response_status, response_body, response_headers)
     VALUES ($1, 'create-run', $2, 'h', 201, $3::jsonb, '{}'::jsonb)`,
    [uid, marker, JSON.stringify({ run_id: neverStarted, state: 'QUEUED' })],
  );

  const r = reconciler();
  try {
    // One NotFound is not taken for a lost workflow (a server back from an outage has answered so
    // for workflows it had): the next pass settles them.
    const first = await r.runOnce();
    expect(first).not.toContain(neverStarted);
    expect(first).not.toContain(lost);
    expect((await getRun(ctx, key, lost)).state).toBe('INPROGRESS');
    const settled = await r.runOnce();
    expect(settled).toEqual(expect.arrayContaining([neverStarted, lost]));
  } finally {
    await r.stop();
  }
  expect((await ctx.api.get(`/api/v1/agent/runs/${neverStarted}`).set(auth(key))).status).toBe(404);
  const records = (await ctx.dataSource.query(`SELECT 1 FROM idempotency_records WHERE key = $1`, [
    marker,
  ])) as unknown[];
  expect(records).toEqual([]);
  const run = await getRun(ctx, key, lost);
  expect(run.state).toBe('ERROR');
  expect((run.status_message as { message: string }).message).toMatch(/no longer exists in Temporal/);
});

describe('after a restore of PostgreSQL', () => {
  const workspaceOf = (runId: string) => path.join(ctx.config.workspace.dir, runId);
  const pausedPasses = async (pass: PausedInRestoreMode) =>
    (await restoreModePasses.get()).values.find((v) => v.labels.pass === pass)?.value ?? 0;
  const rowOf = async (runId: string) =>
    (
      (await ctx.dataSource.query(`SELECT state, turn, updated_at, status_message FROM runs WHERE run_id = $1`, [
        runId,
      ])) as unknown[]
    )[0];
  const workflowStatus = async (runId: string) =>
    (await ctx.client.workflow.getHandle(runWorkflowId(runId)).describe()).status.name;

  /**
   * Runs as a restore leaves them. Ahead: its turn ended and it waits for follow-ups, but the
   * backup has its previous turn, ended a day ago. Unknown: made after the backup, waiting for
   * follow-ups. Closed: the backup has it mid-turn; its workflow has ended since. Working: held
   * mid-turn, but the backup says it ended. Lost: under way, and Temporal never had its workflow.
   */
  async function restoredRuns(key: string, working: Promise<{ text: string }>) {
    const [ahead, unknown, closed] = await Promise.all(
      ['ahead', 'unknown', 'closed'].map((what) =>
        createRun(ctx, key, {
          prompt: `${what} ${uniqueName('restore')}`,
          config: { idle_timeout_minutes: what === 'closed' ? 0 : 60 },
        }),
      ),
    );
    const marker = uniqueName('restore-working');
    ctx.model.script(marker, () => ({ hold: working }));
    const workingRun = await createRun(ctx, key, { prompt: `working ${marker}` });
    for (const runId of [ahead!, unknown!, closed!]) await waitForState(ctx, key, runId, ['SUCCEEDED']);
    await waitFor(
      () => workflowStatus(closed!),
      (status) => status === 'COMPLETED',
      'the closed run workflow to end',
    );
    await ctx.model.waitForCalls(marker, 1);
    const ended = `state = 'SUCCEEDED', ended_at = now() - interval '1 day', updated_at = now() - interval '1 day'`;
    await ctx.dataSource.query(`UPDATE runs SET ${ended} WHERE run_id = ANY($1::uuid[])`, [[ahead, workingRun]]);
    await ctx.dataSource.transaction((tx) => deleteRunRows(tx, [unknown!]));
    await ctx.dataSource.query(
      `UPDATE runs SET state = 'INPROGRESS', ended_at = NULL, status_message = NULL, updated_at = now() - interval '1 hour'
        WHERE run_id = $1`,
      [closed],
    );
    const lost = await insertRunCopy(ctx.dataSource, closed!, { updated_at: new Date(Date.now() - 3_600_000) });
    return { ahead: ahead!, unknown: unknown!, closed: closed!, working: workingRun, lost };
  }

  test('the check lists every run PostgreSQL and Temporal disagree on; restore mode acts on none of them, the service without it does', async () => {
    const { key } = await ctx.newTeamKey();
    const held = gate<{ text: string }>();
    const runs = await restoredRuns(key, held.promise);
    const ours = Object.values(runs);
    try {
      // (a) The check reports each difference, and so does the command (exit code 1).
      const report = await checkConsistency(
        {
          dataSource: ctx.dataSource,
          temporal: ctx.client,
          taskQueue: ctx.config.temporal.taskQueue,
          rpcTimeoutMs: ctx.config.temporal.rpcTimeoutMs,
        },
        // Nothing is left out: the check changes nothing, and other files' runs are filtered out below.
        { quietSeconds: 0 },
      );
      const kinds = (differences: { runId: string; kind: string }[]) =>
        Object.fromEntries(differences.filter((d) => ours.includes(d.runId)).map((d) => [d.runId, d.kind]));
      const expected = {
        [runs.ahead]: 'workflow_ahead',
        [runs.unknown]: 'run_missing',
        [runs.closed]: 'workflow_closed',
        [runs.working]: 'workflow_ahead',
        [runs.lost]: 'workflow_missing',
      };
      expect(kinds(report.differences)).toEqual(expected);
      expect(report.differences.find((d) => d.runId === runs.working)).toMatchObject({
        database: 'SUCCEEDED (turn 1, ended 24 h ago)',
        temporal: 'RUNNING (INPROGRESS)',
      });
      const cli = await restoreCli(ctx, 'check', '--json', '--quiet-seconds', '0');
      expect([cli.code, cli.stderr]).toEqual([1, '']);
      const json = JSON.parse(cli.stdout) as { differences: { run_id: string; kind: string }[] };
      expect(kinds(json.differences.map((d) => ({ runId: d.run_id, kind: d.kind })))).toEqual(expected);
      await ctx.client.workflow.getHandle(runWorkflowId(runs.working)).terminate('checked');
      held.release({ text: 'too late' });

      // (b) Restarted in restore mode (the worker, and the API's reconciler): no workspace goes, no run is settled.
      const sweepsBefore = await pausedPasses('workspace_sweep');
      const reconcilesBefore = await pausedPasses('reconciler');
      await ctx.stopWorker();
      await ctx.startWorker({ ...ctx.config, restoreMode: true });
      expect(await ctx.sweepWorkspaces()).toEqual({ kept: 0, removed: [], paused: true });
      expect(await pausedPasses('workspace_sweep')).toBeGreaterThan(sweepsBefore);
      expect([existsSync(workspaceOf(runs.ahead)), existsSync(workspaceOf(runs.unknown))]).toEqual([true, true]);
      const closedRow = await rowOf(runs.closed);
      const paused = reconciler({ restoreMode: true });
      try {
        expect(await paused.runOnce()).toEqual([]);
      } finally {
        await paused.stop();
      }
      expect(await pausedPasses('reconciler')).toBe(reconcilesBefore + 1);
      expect(await rowOf(runs.closed)).toEqual(closedRow);
      expect(closedRow).toMatchObject({ state: 'INPROGRESS' });

      // (c) Restarted without restore mode, the same service removes both workspaces and settles the run.
      await ctx.stopWorker();
      await ctx.startWorker();
      await ctx.sweepWorkspaces();
      expect([existsSync(workspaceOf(runs.ahead)), existsSync(workspaceOf(runs.unknown))]).toEqual([false, false]);
      const acting = reconciler();
      try {
        expect(await acting.runOnce()).toContain(runs.closed);
      } finally {
        await acting.stop();
      }
      expect(await getRun(ctx, key, runs.closed)).toMatchObject({ state: 'ERROR' });
    } finally {
      held.release({ text: 'too late' });
      for (const runId of [runs.ahead, runs.unknown]) {
        await ctx.client.workflow
          .getHandle(runWorkflowId(runId))
          .terminate('test over')
          .catch(() => undefined);
      }
    }
  });

  test('an API in restore mode serves reads and refuses new runs and follow-ups with 503', async () => {
    const restored = await createTestContext({ worker: false, env: { RESTORE_MODE: 'true' } });
    try {
      const { key } = await restored.newTeamKey();
      const marker = uniqueName('restore-api');
      // A run of the same database, made before the restart.
      const runId = await createRun(ctx, key, { prompt: `Before ${marker}` });
      await waitForState(ctx, key, runId, ['SUCCEEDED']);
      const refused = await restored.api
        .post('/api/v1/agent/runs')
        .set(auth(key))
        .send({ prompt: `New ${marker}` });
      expect([refused.status, refused.body.error_code, refused.headers['retry-after']]).toEqual([
        503,
        'resource_unavailable',
        '60',
      ]);
      expect(refused.body.detail).toMatch(/restore mode \(RESTORE_MODE=true\)/);
      const followup = await restored.api
        .post(`/api/v1/agent/runs/${runId}/followups`)
        .set(auth(key))
        .send({ message: 'more' });
      expect([followup.status, followup.body.error_code]).toEqual([503, 'resource_unavailable']);
      expect((await restored.api.get(`/api/v1/agent/runs/${runId}`).set(auth(key))).status).toBe(200);
      const ready = await restored.api.get('/readyz');
      expect([ready.status, ready.body.accepts_runs, ready.body.restore_mode]).toEqual([200, false, true]);
    } finally {
      await restored.close();
    }
  });
});
