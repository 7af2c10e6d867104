import { existsSync } from 'node:fs';
import path from 'node:path';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
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

  test('takes no new run until a workspace it holds goes; the waiting run then starts there', async () => {
    const { key } = await ctx.newTeamKey();
    const marker = uniqueName('capacity');
    ctx.model.script(marker, () => ({ text: 'done' }));
    const body = { prompt: `Hold a workspace ${marker}`, config: { idle_timeout_minutes: 30 } };
    const first = await createRun(ctx, key, body);
    const second = await createRun(ctx, key, body);
    await waitForState(ctx, key, first, ['SUCCEEDED']);
    await waitForState(ctx, key, second, ['SUCCEEDED']);
    const workspace = (runId: string) => path.join(ctx.config.workspace.dir, runId);
    expect(existsSync(workspace(first)) && existsSync(workspace(second))).toBe(true);

    const third = await createRun(ctx, key, body);
    // Its provisioning is scheduled and stays so: no worker with room polls for it.
    const handle = ctx.client.workflow.getHandle(runWorkflowId(third));
    const pending = await waitFor(
      async () => (await handle.describe()).raw.pendingActivities ?? [],
      (activities) => activities.some((a) => a.activityType?.name === 'provisionEnvironment'),
      'the third run to ask for a workspace',
    );
    expect(String(pending[0]!.state)).toMatch(/SCHEDULED|^1$/);
    expect(existsSync(workspace(third))).toBe(false);

    // Ending the first run's idle window (as an operator cancelling its workflow would) frees room.
    await ctx.client.workflow.getHandle(runWorkflowId(first)).cancel();
    await waitFor(
      async () => existsSync(workspace(first)),
      (exists) => !exists,
      "the first run's workspace to go",
    );
    await waitForState(ctx, key, third, ['SUCCEEDED']);
    expect(existsSync(workspace(third))).toBe(true);
  });
});

describe('a busy worker', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({
      // Before leases, a step that waited 2 s for a slot counted as a dead worker.
      env: { WORKER_MAX_CONCURRENT_RUNS: '200', WORKSPACE_SCHEDULE_TO_START_SECONDS: '2', WORKER_LEASE_SECONDS: '5' },
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
    expect(ctx.model.calls(marker)).toHaveLength(300);
    const res = await ctx.api.get('/api/v1/agent/runs?state=ERROR').set(auth(key));
    expect(res.body.runs).toHaveLength(0);
  }, 300_000);
});
