import { existsSync } from 'node:fs';
import path from 'node:path';
import { runWorkflowId } from '../workflows/run-contract';
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
