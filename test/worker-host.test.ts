import { temporal } from '@temporalio/proto';
import { runWorkflowId } from '../workflows/run-contract';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/** `config.worker_host` pins a run to the worker with that WORKER_ID. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

/** The task queues the run's activities were scheduled on, from its workflow history. */
const activityQueues = (runId: string) => activityQueuesOf(ctx, runId);

async function activityQueuesOf(c: TestContext, runId: string): Promise<string[]> {
  const history = await c.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
  return (history.events ?? []).flatMap((e) =>
    e.activityTaskScheduledEventAttributes
      ? [
          `${e.activityTaskScheduledEventAttributes.activityType?.name}@${e.activityTaskScheduledEventAttributes.taskQueue?.name}`,
        ]
      : [],
  );
}

test('a run pinned to a running worker is provisioned there; an unknown worker is a 409 that names none of the running ones', async () => {
  const { key } = await ctx.newTeamKey();
  const workerId = ctx.config.worker.id;
  const marker = uniqueName('pinned');
  ctx.model.script(marker, () => ({ text: 'done here' }));

  const runId = await createRun(ctx, key, { prompt: `Pinned ${marker}`, config: { worker_host: workerId } });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(run.agent_config).toMatchObject({ worker_host: workerId });
  expect(await activityQueues(runId)).toContain(
    `provisionEnvironment@${ctx.config.temporal.taskQueue}/workspaces@${workerId}`,
  );
  await recordReplayFixture(ctx, runId, 'pinned-worker');

  const unknown = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', config: { worker_host: 'gpu-box-9' } });
  // A valid request that the service's present state (no such worker running) refuses.
  expect(unknown.status).toBe(409);
  expect(unknown.body.detail).toContain('`config.worker_host`: no worker "gpu-box-9" is running');
  // The workers that do run are not named to a team.
  expect(unknown.body.detail).not.toContain(workerId);

  // "warp" (the hosted default) and an identity's default host.
  const anywhere = await createRun(ctx, key, { prompt: `Anywhere ${marker}`, config: { worker_host: 'warp' } });
  const free = await waitForState(ctx, key, anywhere, ['SUCCEEDED']);
  expect(free.agent_config).not.toHaveProperty('worker_host');
  expect(await activityQueues(anywhere)).toContain(
    `provisionEnvironment@${ctx.config.temporal.taskQueue}/provisioning`,
  );
  const identity = await ctx.api
    .post('/api/v1/agent/identities')
    .set(auth(key))
    .send({ name: uniqueName('pinned-agent'), worker_host: workerId })
    .expect(201);
  const byIdentity = await createRun(ctx, key, { prompt: `Agent ${marker}`, agent_identity_uid: identity.body.uid });
  expect((await waitForState(ctx, key, byIdentity, ['SUCCEEDED'])).agent_config).toMatchObject({
    worker_host: workerId,
  });
});

test('a run pinned to a full worker waits there until it has room, then runs there', async () => {
  const small = await createTestContext({ env: { WORKER_MAX_CONCURRENT_RUNS: '1' } });
  try {
    const { key } = await small.newTeamKey();
    const workerId = small.config.worker.id;
    const marker = uniqueName('full');
    const held = gate<{ text: string }>();
    small.model.script(marker, (req) =>
      req.messages[0]!.content.startsWith('First') ? { hold: held.promise } : { text: 'second done' },
    );
    const first = await createRun(small, key, { prompt: `First ${marker}`, config: { worker_host: workerId } });
    await small.model.waitForCalls(marker, 1);
    const second = await createRun(small, key, { prompt: `Second ${marker}`, config: { worker_host: workerId } });
    // Its provisioning reached the worker and waits there for room, heartbeating.
    const handle = small.client.workflow.getHandle(runWorkflowId(second));
    await waitFor(
      async () => (await handle.describe()).raw.pendingActivities ?? [],
      (pending) =>
        pending.some(
          (a) =>
            a.activityType?.name === 'provisionEnvironment' &&
            a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
            a.lastHeartbeatTime != null,
        ),
      'the pinned provisioning to wait on the worker',
    );
    expect(await activityQueuesOf(small, second)).toEqual([
      `provisionEnvironment@${small.config.temporal.taskQueue}/workspaces@${workerId}`,
    ]);
    expect(small.model.calls(marker)).toHaveLength(1);
    held.release({ text: 'first done' });
    await waitForState(small, key, first, ['SUCCEEDED']);
    await waitForState(small, key, second, ['SUCCEEDED']);
  } finally {
    await small.close();
  }
});
