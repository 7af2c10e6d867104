import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { EntityManager, QueryRunner } from 'typeorm';
import type { RunEventNotifier, Wake } from '../api/run-event-notifier';
import { createRunEventStreams, eventData } from '../api/run-event-stream';
import { closeServer, listen } from '../api/server';
import { createLogger } from '../core/logger';
import { insertRunCopy } from './helpers/run-copies';
import { appendNoticeToCurrentTurn, appendRunEvent } from '../db/run-events';
import { applyTransition } from '../db/run-store';
import { addRunUsage, appendReplyWithUsage } from '../db/run-usage';
import { auth, createRun, waitForState } from './helpers/runs';
import { openStream, type ReceivedEvent, type SseStream } from './helpers/sse-client';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * Transactions that write entries of one run at the same time commit them in id order
 * (migration 1763920000000), so that an event stream, which reads on after the highest id it
 * has sent, never skips an entry that commits after one with a higher id.
 */
let ctx: TestContext;
let key: string;
let template: string;
beforeAll(async () => {
  ctx = await createTestContext();
  ({ key } = await ctx.newTeamKey());
  const marker = uniqueName('order');
  ctx.model.script(marker, () => ({ text: 'done' }));
  template = await createRun(ctx, key, { prompt: `Template ${marker}`, config: { idle_timeout_minutes: 0 } });
  await waitForState(ctx, key, template, ['SUCCEEDED']);
});
afterAll(async () => {
  await ctx?.close();
});

/** A copy of the template run, INPROGRESS in turn 1, that no workflow works on: only the test writes its entries. */
async function quietRun(): Promise<string> {
  return insertRunCopy(ctx.dataSource, template, { state: 'INPROGRESS', turn: 1 });
}

async function notice(manager: EntityManager, runId: string, message: string): Promise<void> {
  await appendRunEvent(manager, {
    runId,
    eventKey: `notice-${message}`,
    kind: 'notice',
    turn: 1,
    payload: { message },
  });
}

async function entries(runId: string): Promise<{ id: string; kind: string; message: string | null }[]> {
  return (await ctx.dataSource.query(
    `SELECT id, kind, COALESCE(payload->>'message', payload->>'state') AS message FROM run_events WHERE run_id = $1 ORDER BY id`,
    [runId],
  )) as { id: string; kind: string; message: string | null }[];
}

/** A connection of its own, to hold a transaction open, and its backend's pid. */
async function connection(): Promise<{ runner: QueryRunner; pid: number }> {
  const runner = ctx.dataSource.createQueryRunner();
  await runner.connect();
  const [{ pid }] = (await runner.query('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
  return { runner, pid };
}

async function release(runner: QueryRunner): Promise<void> {
  if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
  await runner.release();
}

async function waitsForALock(pid: number): Promise<boolean> {
  const [row] = (await ctx.dataSource.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pid])) as {
    wait_event_type: string | null;
  }[];
  return row?.wait_event_type === 'Lock';
}

const eventsUrl = (runId: string) => `${ctx.baseUrl}/api/v1/agent/runs/${runId}/events`;
const isEnd = (e: ReceivedEvent) => e.event === 'end';

test("a notice written while a step's transaction is open reaches a live and a resumed stream after the step's entry, each once", async () => {
  const runId = await quietRun();
  await notice(ctx.dataSource.manager, runId, 'before');
  const live = await openStream(eventsUrl(runId), auth(key));
  await live.waitForEvent((e) => e.event === 'notice');

  const step = await connection();
  const worker = await connection();
  let seenBeforeTheStepCommitted: string[];
  try {
    // A step's transaction has written its entry and not committed yet...
    await step.runner.startTransaction();
    await notice(step.runner.manager, runId, 'step');
    // ...when the worker records a refused MCP connection (worker/create-worker.ts), committed at once.
    let noticeCommitted = false;
    const refusal = appendNoticeToCurrentTurn(worker.runner.manager, runId, 'notice-refused', {
      message: 'refused',
    }).then(() => {
      noticeCommitted = true;
    });
    await waitFor(
      async () => noticeCommitted || (await waitsForALock(worker.pid)),
      Boolean,
      "the worker's notice to commit or to wait for the step",
    );
    // Had it committed first, with the higher id, the stream would have sent it, and read on after it.
    if (noticeCommitted) await live.waitForEvent((e) => e.data.includes('"refused"'));
    seenBeforeTheStepCommitted = live.ids();
    await step.runner.commitTransaction();
    await refusal;
  } finally {
    await release(step.runner);
    await release(worker.runner);
  }
  await ctx.dataSource.transaction((tx) => applyTransition(tx, { runId, turn: 1, state: 'SUCCEEDED' }));
  await live.waitForEvent(isEnd);

  const all = await entries(runId);
  // Ids in commit order: the step's entry before the notice that waited for it.
  expect(all.map((e) => e.message)).toEqual(['before', 'step', 'refused', 'SUCCEEDED']);
  const ids = all.map((e) => e.id);
  expect(live.ids()).toEqual(ids);
  // A client cut off at that moment resumes with Last-Event-ID and misses nothing.
  const resumed = await openStream(eventsUrl(runId), {
    ...auth(key),
    'Last-Event-ID': seenBeforeTheStepCommitted.at(-1)!,
  });
  await resumed.waitForEvent(isEnd);
  expect([...seenBeforeTheStepCommitted, ...resumed.ids()]).toEqual(ids);
});

test("a model call's entry and then its usage, and a state change that updates the run first, both commit (no deadlock)", async () => {
  const runId = await quietRun();
  const [{ tokens }] = (await ctx.dataSource.query(`SELECT total_tokens::int AS tokens FROM runs WHERE run_id = $1`, [
    runId,
  ])) as [{ tokens: number }];
  const step = await connection();
  const reconciler = await connection();
  let change: Promise<boolean> | undefined;
  try {
    // As activities/agent-step-activities.ts records a model call: its entry, then its usage on the run.
    await step.runner.startTransaction();
    await notice(step.runner.manager, runId, 'reply');
    // As the reconciler records how the run ended: the run's row, then its state entry.
    await reconciler.runner.startTransaction();
    let changed = false;
    change = applyTransition(reconciler.runner.manager, {
      runId,
      turn: 1,
      state: 'ERROR',
      statusMessage: { message: 'The workflow was terminated.', retryable: false },
    })
      .then(async (applied) => {
        await reconciler.runner.commitTransaction();
        return applied;
      })
      .finally(() => (changed = true));
    await waitFor(
      async () => changed || (await waitsForALock(reconciler.pid)),
      Boolean,
      'the state change to be written or to wait for the step',
    );
    await addRunUsage(step.runner.manager, runId, 42, null);
    await step.runner.commitTransaction();
    expect(await change).toBe(true);
  } finally {
    await release(step.runner);
    await change?.catch(() => undefined);
    await release(reconciler.runner);
  }
  expect((await entries(runId)).map((e) => e.message)).toEqual(['reply', 'ERROR']);
  const [run] = (await ctx.dataSource.query(`SELECT state, total_tokens::int AS tokens FROM runs WHERE run_id = $1`, [
    runId,
  ])) as { state: string; tokens: number }[];
  expect(run).toEqual({ state: 'ERROR', tokens: tokens + 42 });
});

test('the rows of one insert take their ids in order: a new run’s prompt, then its QUEUED state', async () => {
  const rows = (await ctx.dataSource.query(`SELECT event_key FROM run_events WHERE run_id = $1 ORDER BY id LIMIT 2`, [
    template,
  ])) as { event_key: string }[];
  expect(rows.map((r) => r.event_key)).toEqual(['prompt', 'state-t1-QUEUED']);
});

/** Whether a page read of run entries (db/run-event-reads.ts loadRunEventsAfter) waits for the lock `pid` holds. */
async function pageReadWaitsFor(pid: number): Promise<boolean> {
  const rows = (await ctx.dataSource.query(
    `SELECT 1 FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid)) AND query LIKE '%FROM run_events WHERE%'`,
    [pid],
  )) as unknown[];
  return rows.length > 0;
}

/**
 * The event streams of an API process whose notifications the test delivers when it chooses:
 * a NOTIFY reaches the API's listening connection independently of the reads, so it may be
 * handled before or after the page read that returns its entry.
 */
async function streamsWithHeldNotifications() {
  const wakes = new Map<string, Set<Wake>>();
  const notifier: RunEventNotifier = {
    subscribe(runId, wake) {
      if (!wakes.has(runId)) wakes.set(runId, new Set());
      wakes.get(runId)!.add(wake);
      return () => wakes.get(runId)!.delete(wake);
    },
    close: async () => undefined,
  };
  const streams = createRunEventStreams({
    dataSource: ctx.dataSource,
    notifier,
    heartbeatSeconds: 15,
    logger: createLogger('error', 'test'),
  });
  const app = new Koa();
  app.use((koa) =>
    streams.serve(koa, {
      runId: koa.path.slice(1),
      afterId: '0',
      present: async (events) => events.map((e) => eventData(koa.path.slice(1), e)),
    }),
  );
  const server = await listen(app, 0, '127.0.0.1');
  return {
    url: (runId: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/${runId}`,
    announce: (runId: string, id: string) => [...(wakes.get(runId) ?? [])].forEach((wake) => wake(BigInt(id))),
    close: async () => {
      await streams.close();
      await closeServer(server);
    },
  };
}

test('a terminal state that commits after a stream read the run, and is announced after the stream sent it, ends the stream', async () => {
  const api = await streamsWithHeldNotifications();
  const runId = await quietRun();
  const writer = await connection();
  try {
    let live: SseStream;
    try {
      await writer.runner.startTransaction();
      // The stream reads the run's state (INPROGRESS), then waits here for its page of entries...
      await writer.runner.query('LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE');
      live = await openStream(api.url(runId));
      await waitFor(() => pageReadWaitsFor(writer.pid), Boolean, "the stream's page read to wait for the lock");
      // ...while the run ends: the page then holds the terminal entry.
      await applyTransition(writer.runner.manager, { runId, turn: 1, state: 'SUCCEEDED' });
      await writer.runner.commitTransaction();
    } finally {
      await release(writer.runner);
    }
    const terminal = await live.waitForEvent((e) => e.event === 'state');
    // Its notification is handled only now, behind what the stream has sent.
    api.announce(runId, terminal.id!);
    const end = await live.waitForEvent(isEnd, 10_000);
    expect(JSON.parse(end.data)).toEqual({ run_id: runId, state: 'SUCCEEDED' });
    expect(live.events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data).payload.state)).toEqual([
      'SUCCEEDED',
    ]);
  } finally {
    await api.close();
  }
});

test('two attempts of a step recording their replies: the first is kept and counted once, and the second is told', async () => {
  const runId = await quietRun();
  const usage = async () =>
    (
      (await ctx.dataSource.query(
        `SELECT total_tokens::int AS tokens, COALESCE(inference_cost_usd, 0)::float8 AS cost FROM runs WHERE run_id = $1`,
        [runId],
      )) as { tokens: number; cost: number }[]
    )[0]!;
  const before = await usage();
  const reply = (text: string) => ({
    runId,
    eventKey: 'assistant-t1-s0',
    turn: 1,
    payload: { text, model_id: 'openai/test', total_tokens: 7, input_tokens: 5, output_tokens: 2 },
  });
  expect(await appendReplyWithUsage(ctx.dataSource.manager, reply('first'), 7, 0.5)).toBe(true);
  expect(await appendReplyWithUsage(ctx.dataSource.manager, reply('second'), 7, 0.5)).toBe(false);
  const replies = (await ctx.dataSource.query(
    `SELECT payload->>'text' AS text FROM run_events WHERE run_id = $1 AND kind = 'assistant'`,
    [runId],
  )) as { text: string }[];
  expect(replies).toEqual([{ text: 'first' }]);
  const after = await usage();
  expect(after.tokens).toBe(before.tokens + 7);
  expect(after.cost).toBeCloseTo(before.cost + 0.5, 6);
});
