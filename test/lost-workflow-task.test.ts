import { MockActivityEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { ActivityDeps } from '../activities/deps';
import { createAgentStepActivities } from '../activities/agent-step-activities';
import { createLogger } from '../core/logger';
import { recordFollowup } from '../db/followups';
import { connectWorkerConnection } from '../infra/connections';
import { lockRun } from '../db/run-store';
import {
  followupSignal,
  provisioningQueue,
  RUN_WORKFLOW_TYPE,
  runWorkflowId,
  type AgentStepOutcome,
  type RunWorkflowInput,
} from '../workflows/run-contract';
import { createRun, waitForState } from './helpers/runs';
import { createTestContext, testStack, uniqueName, type TestContext } from './helpers/test-context';

/**
 * A workflow task that recorded a turn's end in PostgreSQL (a local activity) and then never
 * completed (Temporal froze, the worker died) is replayed. When a follow-up's signal came in
 * meanwhile, the replay finds it beside the last step's result and goes on with the turn, which
 * the database has ended and the follow-up has reopened as the next one: before the fix the run
 * stayed QUEUED for good (seen in CI under a minute of Temporal frozen). Now the step sees that
 * its turn is over and does nothing, and the workflow starts the stored turn.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { ANTHROPIC_API_KEY: 'sk-ant-lost-task' } });
});
afterAll(async () => {
  await ctx?.close();
});

/** The step activity as the worker has it, on this test's database and configuration. */
function stepActivity() {
  const logger = createLogger('error', 'test');
  const deps = { dataSource: ctx.dataSource, config: ctx.config, logger } as ActivityDeps;
  return createAgentStepActivities(deps).runAgentStep;
}

/** Records a follow-up that reopens the ended run in its next turn, as the API does, without telling the workflow. */
async function reopenWithoutSignal(runId: string, creatorUid: string): Promise<number> {
  return ctx.dataSource.transaction(async (tx) => {
    const locked = (await lockRun(tx, runId))!;
    const recorded = await recordFollowup(
      tx,
      { runId, message: 'and one more thing', mode: 'normal', creatorUid, locked },
      true,
    );
    return recorded.seq;
  });
}

const undelivered = async (runId: string) =>
  (
    (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM followups WHERE run_id = $1 AND delivered_at IS NULL`, [
      runId,
    ])) as [{ n: number }]
  )[0].n;

test.each([
  ['our own loop', {}],
  ['Claude Code', { harness: { type: 'claude' } }],
])(
  'a step of a turn the database has ended and a follow-up reopened does nothing and says so (%s)',
  async (_name, config) => {
    const { key, uid } = await ctx.newTeamKey();
    const marker = uniqueName('lost-task');
    ctx.model.script(marker, (_req, call) => ({ text: `answer ${call}` }));
    const runId = await createRun(ctx, key, {
      prompt: `Answer ${marker}`,
      config: { ...config, idle_timeout_minutes: 10 },
    });
    await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
    const seq = await reopenWithoutSignal(runId, uid);

    // The replayed workflow's next step of turn 1.
    const outcome = await new MockActivityEnvironment().run(stepActivity(), { runId, turn: 1, step: 1 });
    expect(outcome).toEqual({ done: true, turnEnded: true });
    expect(await undelivered(runId)).toBe(1);
    expect(ctx.model.calls(marker)).toHaveLength(1);

    // Told of the follow-up, the run's workflow works turn 2 with it.
    await ctx.client.workflow.getHandle(runWorkflowId(runId)).signal(followupSignal, { seq });
    await ctx.model.waitForCalls(marker, 2);
    const done = await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 120_000);
    expect(done.status_message).toEqual({ message: 'answer 2' });
    expect(await undelivered(runId)).toBe(0);
  },
);

test('a workflow told by its step that the turn is over starts the stored turn instead of going idle', async () => {
  const taskQueue = uniqueName('lost-task-queue');
  const runId = uniqueName('run');
  const calls: string[] = [];
  let reopened = false;
  const store = {
    async admitRun() {
      return { admitted: true, turn: reopened ? 2 : 1 };
    },
    async startTurn() {
      calls.push('startTurn');
      const turn = calls.filter((c) => c === 'startTurn').length === 1 ? 1 : reopened ? 2 : null;
      return { turn, idleTimeoutMinutes: 0 };
    },
    async provisionEnvironment() {
      return { workspaceQueue: provisioningQueue(taskQueue), workspaceId: 'w1' };
    },
    async resolveSkillsAndMcpServers() {
      return {};
    },
    async runAgentStep({ turn, step }: { turn: number; step: number }): Promise<AgentStepOutcome> {
      calls.push(`step t${turn}-s${step}`);
      if (turn === 1 && step === 0) {
        // The follow-up's signal lands before this step's result: the workflow goes on with turn 1.
        reopened = true;
        await client.workflow.getHandle(runWorkflowId(runId)).signal(followupSignal, { seq: 1 });
        return { done: true };
      }
      if (turn === 1) return { done: true, turnEnded: true };
      return { done: true };
    },
    async recordTransition({ turn, state }: { turn: number; state: string }) {
      calls.push(`record t${turn} ${state}`);
      return { applied: true };
    },
    async wakeWaitingRuns() {
      return { woken: [] };
    },
    async removeWorkspace() {
      calls.push('removeWorkspace');
      return true;
    },
    async isWorkspaceWorkerAlive() {
      return { alive: true, secondsSinceRenewal: 0 };
    },
  };
  const client = ctx.client;
  const connection = await connectWorkerConnection({ address: ctx.stack.temporalAddress });
  try {
    const [main, provisioning] = await Promise.all(
      [taskQueue, provisioningQueue(taskQueue)].map((queue) =>
        Worker.create({
          connection,
          namespace: ctx.config.temporal.namespace,
          taskQueue: queue,
          workflowBundle: { codePath: testStack().workflowBundlePath },
          activities: store,
        }),
      ),
    );
    const input: RunWorkflowInput = {
      runId,
      settings: {
        heartbeatTimeoutSeconds: 5,
        workspaceScheduleToStartSeconds: 5,
        modelRetry: { maxAttempts: 1, initialIntervalMs: 100, maxIntervalMs: 100 },
        workerLeaseSeconds: 5,
      },
    };
    const execution = client.workflow.execute(RUN_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: runWorkflowId(runId),
      args: [input],
    });
    await Promise.all([main!.runUntil(execution), provisioning!.runUntil(execution)]);
  } finally {
    await connection.close();
  }
  expect(calls).toEqual([
    'startTurn',
    'step t1-s0',
    'step t1-s1',
    'record t1 SUCCEEDED',
    'startTurn',
    'step t2-s0',
    'record t2 SUCCEEDED',
    'removeWorkspace',
  ]);
});
