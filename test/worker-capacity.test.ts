import { existsSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { createLogger } from '../core/logger';
import { renewWorkerLease } from '../db/worker-leases';
import { connectWorkerConnection } from '../infra/connections';
import { createWorker } from '../worker/create-worker';
import { runWorkflowId, workspaceQueueFor } from '../workflows/run-contract';
import { activityAttempts } from './helpers/activity-attempts';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/** A model that takes its time, as real ones do under load. */
const slowly = <T>(ms: number, value: T) => ({
  hold: new Promise<T>((resolve) => setTimeout(() => resolve(value), ms)),
});

describe('a worker at capacity', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ env: { WORKER_MAX_CONCURRENT_RUNS: '2' } });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  test('takes no new run while it works on as many as it may; the waiting run starts once one finishes', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('capacity');
    const first = gate<{ text: string }>();
    const second = gate<{ text: string }>();
    ctx.model.script(marker, (req) =>
      req.messages[0]!.content.includes('one')
        ? { hold: first.promise }
        : req.messages[0]!.content.includes('two')
          ? { hold: second.promise }
          : { text: 'done' },
    );
    const one = await createRun(ctx, key, { prompt: `Run one ${marker}` });
    const two = await createRun(ctx, key, { prompt: `Run two ${marker}` });
    await ctx.model.waitForCalls(marker, 2);

    const three = await createRun(ctx, key, { prompt: `Run three ${marker}` });
    // Its provisioning is scheduled and stays so: no worker with room polls for it.
    const handle = ctx.client.workflow.getHandle(runWorkflowId(three));
    const pending = await waitFor(
      async () => (await handle.describe()).raw.pendingActivities ?? [],
      (activities) => activities.some((a) => a.activityType?.name === 'provisionEnvironment'),
      'the third run to ask for a workspace',
    );
    expect(String(pending[0]!.state)).toMatch(/SCHEDULED|^1$/);
    expect(existsSync(path.join(ctx.config.workspace.dir, three))).toBe(false);

    first.release({ text: 'done' });
    await waitForState(ctx, key, one, ['SUCCEEDED']);
    await waitForState(ctx, key, three, ['SUCCEEDED']);
    second.release({ text: 'done' });
    await waitForState(ctx, key, two, ['SUCCEEDED']);
    await recordReplayFixture(ctx, three, 'provisioning-waits-for-capacity');
  });
});

describe('a busy worker', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({
      // Before leases, a step that waited 2 s for a slot counted as a dead worker.
      env: {
        WORKER_MAX_CONCURRENT_RUNS: '200',
        WORKSPACE_SCHEDULE_TO_START_SECONDS: '2',
        WORKER_LEASE_SECONDS: '5',
        // The production default and more: on a loaded 2-core machine a heartbeat of a busy step
        // can be late by seconds, and a step retried for that calls its model twice.
        ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '30',
      },
    });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  test('150 concurrent two-step runs with a slow model: every one succeeds where it was provisioned', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('busy');
    ctx.model.script(marker, (req) =>
      req.messages.some((m) => m.role === 'tool')
        ? slowly(3000, { text: 'done' })
        : slowly(3000, { text: '', toolCalls: [{ name: 'read_skill', arguments: { name: 'svc-platform' } }] }),
    );
    const runIds = await Promise.all(
      Array.from({ length: 150 }, (_, i) => createRun(ctx, key, { prompt: `Busy ${i} ${marker}` })),
    );
    await ctx.model.waitForCalls(marker, 150);
    for (const runId of runIds) await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 180_000);
    for (const runId of runIds) {
      const notices = (await transcript(ctx, runId))
        .filter((e) => e.kind === 'notice')
        .map((e) => String(e.payload.message));
      expect(notices.filter((n) => n.startsWith('Workspace on'))).toHaveLength(1);
      expect(notices.some((n) => n.includes('is gone'))).toBe(false);
    }
    // A step run again (a late heartbeat, a write that failed after the model answered) asks its
    // model again: each run is asked exactly twice, and a run that was not shows why.
    const calls = ctx.model.calls(marker);
    const askedOtherThanTwice = [];
    for (const [i, runId] of runIds.entries()) {
      const asked = calls.filter((c) => c.messages[0]!.content.includes(`Busy ${i} ${marker}`)).length;
      if (asked !== 2) askedOtherThanTwice.push({ runId, asked, activities: await activityAttempts(ctx, runId) });
    }
    expect({ askedOtherThanTwice, aborted: ctx.model.aborted.filter((m) => m === marker).length }).toEqual({
      askedOtherThanTwice: [],
      aborted: 0,
    });
    expect(calls).toHaveLength(300);
    const res = await ctx.api.get('/api/v1/agent/runs?state=ERROR').set(auth(key));
    expect(res.body.runs).toHaveLength(0);
  }, 300_000);
});

describe('a worker that is alive but does not get to a task in time', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({
      env: {
        WORKER_ID: uniqueName('slow-worker'),
        WORKSPACE_SCHEDULE_TO_START_SECONDS: '2',
        WORKER_LEASE_SECONDS: '5',
      },
    });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  test('keeps its runs while its lease is renewed: the task is scheduled again, nothing is re-provisioned', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('slow');
    ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
    const runId = await createRun(ctx, key, { prompt: `Slow ${marker}`, config: { idle_timeout_minutes: 30 } });
    await waitForState(ctx, key, runId, ['SUCCEEDED']);

    // Another worker carries on with the workflows; the run's own worker stops polling, but its
    // lease goes on being renewed: busy, not dead.
    const otherConnection = await connectWorkerConnection({ address: ctx.stack.temporalAddress });
    const other = await createWorker({
      config: { ...ctx.config, worker: { ...ctx.config.worker, id: uniqueName('other-worker') } },
      dataSource: ctx.dataSource,
      connection: otherConnection,
      logger: createLogger('error', 'test'),
      workflowBundlePath: ctx.stack.workflowBundlePath,
      platformEndpoints: [],
    });
    const otherRun = other.run();
    await ctx.stopWorker();
    const queue = workspaceQueueFor(ctx.config.temporal.taskQueue, ctx.config.worker.id);
    const renew = () =>
      renewWorkerLease(ctx.dataSource.manager, { workspaceQueue: queue, capacity: 1, inUse: 1, leaseSeconds: 5 });
    await renew();
    const renewing = setInterval(() => void renew(), 1000);
    try {
      await ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key)).send({ message: 'again' }).expect(200);
      const handle = ctx.client.workflow.getHandle(runWorkflowId(runId));
      await waitFor(
        async () =>
          (await handle.fetchHistory()).events?.filter(
            (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
          ).length ?? 0,
        (timedOut) => timedOut >= 2,
        'the step to wait past its schedule-to-start timeout twice',
      );
    } finally {
      clearInterval(renewing);
    }
    await ctx.startWorker();
    await waitForState(ctx, key, runId, ['SUCCEEDED']);
    other.shutdown();
    await otherRun;
    await otherConnection.close();
    const notices = (await transcript(ctx, runId))
      .filter((e) => e.kind === 'notice')
      .map((e) => String(e.payload.message));
    expect(notices.filter((n) => n.startsWith('Workspace on'))).toHaveLength(1);
    expect(notices.some((n) => n.includes('is gone'))).toBe(false);
    expect(ctx.model.calls(marker)).toHaveLength(2);
    await recordReplayFixture(ctx, runId, 'step-waits-while-worker-busy');
  });
});
