import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { ensureTemporalTestServer } from '../infra/temporal-test-server';
import {
  followupSignal,
  provisioningQueue,
  RUN_WORKFLOW_TYPE,
  runWorkflowId,
  SEARCH_ATTRIBUTE_KEYS,
  type AgentStepOutcome,
  type RunWorkflowInput,
} from '../workflows/run-contract';
import { testStack, uniqueName } from './helpers/test-context';

/**
 * The run workflow's waits that last minutes in production (the idle window, admission's
 * periodic look), on Temporal's time-skipping test server with stub activities: what a real-time
 * test could only show with windows shortened to seconds, at their real lengths, in seconds.
 */
let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await startTimeSkipping(await ensureTemporalTestServer());
  // The workflow sets the run's state and name as search attributes, as on the real cluster (the
  // test server can add them, not list them: infra/search-attributes.ts would not know to).
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      SEARCH_ATTRIBUTE_KEYS.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}, 180_000);
afterAll(async () => {
  await env?.teardown();
});

/**
 * The test server, started again when it did not answer within the SDK's fixed 5 s (a loaded
 * machine: seen under CI's CPU hog); each attempt is a new process on a new port.
 */
async function startTimeSkipping(path: string): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: { type: 'existing-path', path } },
      });
    } catch (err) {
      if (attempt >= 4 || !/did not start within/.test(String((err as Error).message))) throw err;
    }
  }
}

const MINUTE = 60_000;

const SETTINGS: RunWorkflowInput['settings'] = {
  heartbeatTimeoutSeconds: 30,
  workspaceScheduleToStartSeconds: 60,
  modelRetry: { maxAttempts: 1, initialIntervalMs: 100, maxIntervalMs: 100 },
  workerLeaseSeconds: 60,
};

/** Stub activities that note each call with the test server's clock, minutes after `startedAt`. */
function stubStore(behaviour: {
  admitRun?: (call: number) => { admitted: boolean; turn: number; recheckSeconds?: number };
  startTurn: (call: number) => { turn: number | null; idleTimeoutMinutes: number };
}) {
  const calls: { what: string; minute: number }[] = [];
  let startedAt = 0;
  const note = async (what: string) => {
    const now = await env.currentTimeMs();
    if (!startedAt) startedAt = now;
    calls.push({ what, minute: Math.round((now - startedAt) / MINUTE) });
  };
  const count = (what: string) => calls.filter((c) => c.what === what).length;
  const store = {
    async admitRun() {
      await note('admitRun');
      return behaviour.admitRun?.(count('admitRun')) ?? { admitted: true, turn: 1 };
    },
    async startTurn() {
      await note('startTurn');
      return behaviour.startTurn(count('startTurn'));
    },
    async provisionEnvironment({ runId }: { runId: string }) {
      return { workspaceQueue: provisioningQueue(queueOf(runId)), workspaceId: 'w1' };
    },
    async resolveSkillsAndMcpServers() {
      return {};
    },
    async runAgentStep({ turn, step }: { turn: number; step: number }): Promise<AgentStepOutcome> {
      await note(`step t${turn}-s${step}`);
      return { done: true };
    },
    async recordTransition({ turn, state }: { turn: number; state: string }) {
      await note(`record t${turn} ${state}`);
      return { applied: true };
    },
    async wakeWaitingRuns() {
      return { woken: [] };
    },
    async removeWorkspace() {
      await note('removeWorkspace');
      return true;
    },
    async isWorkspaceWorkerAlive() {
      return { alive: true, secondsSinceRenewal: 0 };
    },
  };
  return { store, calls };
}

const queues = new Map<string, string>();
const queueOf = (runId: string) => queues.get(runId)!;

/** Runs the workflow of a new run to its end on workers of `store`; `during` acts on it meanwhile. */
async function runWorkflow(
  store: ReturnType<typeof stubStore>['store'],
  during: (runId: string) => Promise<void> = async () => undefined,
): Promise<void> {
  const runId = uniqueName('run');
  const taskQueue = uniqueName('time-skipping');
  queues.set(runId, taskQueue);
  const workers = await Promise.all(
    [taskQueue, provisioningQueue(taskQueue)].map((queue) =>
      Worker.create({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue: queue,
        workflowBundle: { codePath: testStack().workflowBundlePath },
        activities: store,
      }),
    ),
  );
  const handle = await env.client.workflow.start(RUN_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: runWorkflowId(runId),
    args: [{ runId, settings: SETTINGS } satisfies RunWorkflowInput],
  });
  const done = (async () => {
    await during(runId);
    await handle.result();
  })();
  await Promise.all(workers.map((worker) => worker.runUntil(done)));
}

test('the idle window at its real length: a follow-up at minute 29 starts the next turn; 30 quiet minutes end the run', async () => {
  const { store, calls } = stubStore({
    startTurn: (call) => ({ turn: call <= 2 ? call : null, idleTimeoutMinutes: 30 }),
  });
  await runWorkflow(store, async (runId) => {
    await env.sleep(29 * MINUTE);
    // Still waiting for a follow-up: the workspace is kept.
    expect(calls.map((c) => c.what)).not.toContain('removeWorkspace');
    await env.client.workflow.getHandle(runWorkflowId(runId)).signal(followupSignal, { seq: 1 });
  });
  expect(calls).toEqual([
    { what: 'admitRun', minute: 0 },
    { what: 'startTurn', minute: 0 },
    { what: 'step t1-s0', minute: 0 },
    { what: 'record t1 SUCCEEDED', minute: 0 },
    { what: 'admitRun', minute: 29 },
    { what: 'startTurn', minute: 29 },
    { what: 'step t2-s0', minute: 29 },
    { what: 'record t2 SUCCEEDED', minute: 29 },
    { what: 'removeWorkspace', minute: 59 },
  ]);
}, 120_000);

test('a run its team cannot admit yet looks again each minute, or after the recheckSeconds it is given, without a wake-up signal', async () => {
  const { store, calls } = stubStore({
    admitRun: (call) =>
      call <= 2
        ? { admitted: false, turn: 1 }
        : call === 3
          ? { admitted: false, turn: 1, recheckSeconds: 300 }
          : { admitted: true, turn: 1 },
    startTurn: () => ({ turn: 1, idleTimeoutMinutes: 0 }),
  });
  await runWorkflow(store);
  expect(calls.filter((c) => c.what === 'admitRun').map((c) => c.minute)).toEqual([0, 1, 2, 7]);
  expect(calls.slice(-4)).toEqual([
    { what: 'startTurn', minute: 7 },
    { what: 'step t1-s0', minute: 7 },
    { what: 'record t1 SUCCEEDED', minute: 7 },
    { what: 'removeWorkspace', minute: 7 },
  ]);
}, 120_000);
