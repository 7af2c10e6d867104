import { ADMISSION_GRACE_SECONDS, admitRunTurn, runsToAdmitNext } from '../db/team-admission';
import { applyTransition } from '../db/run-store';
import { createApiKeyService } from '../services/keys/api-key-service';
import { createOrchestrationActivities } from '../activities/orchestration-activities';
import type { ActivityDeps } from '../activities/deps';
import { createLogger } from '../core/logger';
import { objectBlobStore } from '../infra/object-store/object-blob-store';
import { findRun } from '../db/run-reads';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { createRunService } from '../services/runs/run-service';
import { createFactory, dispatch, listRuns } from './helpers/factories';
import { runWorkflowId } from '../workflows/run-contract';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, getRun, transcript, waitForState, type RunBody } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, secretsKeyringEnv, uniqueName, waitFor, type TestContext } from './helpers/test-context';

jest.setTimeout(120_000);

const QUOTAS = { TEAM_MAX_CONCURRENT_RUNS: '2', TEAM_MAX_RUNS_PER_HOUR: '5' };
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: QUOTAS });
});
afterAll(async () => {
  await ctx?.close();
});

const message = (run: RunBody) => (run.status_message as { message?: string } | undefined)?.message ?? '';

/** Resolves once the run reads QUEUED with the status message of a run waiting for a slot. */
const waitingForSlot = (c: TestContext, key: string, runId: string) =>
  waitFor(
    () => getRun(c, key, runId),
    (run) => run.state === 'QUEUED' && message(run).startsWith('Waiting for a slot'),
    `run ${runId} to wait for a slot`,
  );

async function teamRunCount(c: TestContext, team: string): Promise<number> {
  const [{ count }] = (await c.dataSource.query(
    `SELECT count(*)::int AS count FROM runs r JOIN teams t ON t.id = r.team_id WHERE t.name = $1`,
    [team],
  )) as [{ count: number }];
  return count;
}

/**
 * Runs `body` with a new team's key on a context with no worker: the runs' workflows never look,
 * and the test makes the decisions they would. The workflows of the runs it lists in `runs` are
 * ended afterwards.
 */
async function withIdleTeam(body: (idle: TestContext, key: string, runs: string[]) => Promise<void>): Promise<void> {
  const idle = await createTestContext({ worker: false, env: QUOTAS });
  const runs: string[] = [];
  try {
    const { key } = await idle.newTeamKey();
    await body(idle, key, runs);
  } finally {
    for (const runId of runs) {
      await idle.client.workflow
        .getHandle(runWorkflowId(runId))
        .terminate('test over')
        .catch(() => undefined);
    }
    await idle.close();
  }
}

test('TEAM_MAX_CONCURRENT_RUNS=2: a third run waits QUEUED and starts the moment a slot frees, in order, across restarts; cancelling a waiting run frees nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const markers = ['a', 'b', 'c', 'd', 'e'].map((m) => uniqueName(`slot-${m}`));
  const [mA, mB, mC, mD, mE] = markers as [string, string, string, string, string];
  const gates = new Map(markers.map((m) => [m, gate<{ text: string }>()]));
  for (const m of markers) ctx.model.script(m, () => ({ hold: gates.get(m)!.promise }));
  const release = (m: string) => gates.get(m)!.release({ text: `done ${m}` });

  const a = await createRun(ctx, key, { prompt: `First ${mA}` });
  const b = await createRun(ctx, key, { prompt: `Second ${mB}` });
  await ctx.model.waitForCalls(mA, 1);
  await ctx.model.waitForCalls(mB, 1);
  const c = await createRun(ctx, key, { prompt: `Third ${mC}` });
  const waiting = await waitingForSlot(ctx, key, c);
  expect(message(waiting)).toContain('TEAM_MAX_CONCURRENT_RUNS allows 2 at once');
  expect(message(waiting)).toContain('2 of this team');
  expect(waiting.started_at ?? null).toBeNull();

  // Another team is not held up.
  const other = await ctx.newTeamKey();
  const otherRun = await createRun(ctx, other.key, { prompt: 'another team' });
  await waitForState(ctx, other.key, otherRun, ['SUCCEEDED']);

  // A waiting run can be cancelled, and that frees nothing.
  const e = await createRun(ctx, key, { prompt: `Fifth ${mE}` });
  await waitingForSlot(ctx, key, e);
  expect((await ctx.api.post(`/api/v1/agent/runs/${e}/cancel`).set(auth(key))).status).toBe(200);
  await waitForState(ctx, key, e, ['CANCELLED']);

  // A restart of the worker, and a second API instance, in between.
  await ctx.stopWorker();
  const api2 = await createTestContext({
    worker: false,
    env: {
      ...QUOTAS,
      TEMPORAL_TASK_QUEUE: ctx.config.temporal.taskQueue,
      ...secretsKeyringEnv(ctx),
    },
  });
  let d: string;
  try {
    d = await createRun(api2, key, { prompt: `Fourth ${mD}` });
  } finally {
    await api2.close();
  }
  await ctx.startWorker();
  // D's workflow first looks after the restart: still two runs hold the slots, and C is ahead.
  const dWaiting = await waitingForSlot(ctx, key, d);
  expect(message(dWaiting)).toContain('1 run(s) queued before this one');
  // A and B go on where they were (their steps are retried on the restarted worker).
  await ctx.model.waitForCalls(mA, 2);
  await ctx.model.waitForCalls(mB, 2);
  for (const run of [a, b]) expect((await getRun(ctx, key, run)).state).toBe('INPROGRESS');
  for (const run of [c, d]) expect((await getRun(ctx, key, run)).state).toBe('QUEUED');
  for (const m of [mC, mD, mE]) expect(ctx.model.calls(m)).toHaveLength(0);

  // A ends: C (queued before D) starts at once.
  release(mA);
  await ctx.model.waitForCalls(mC, 1);
  const [ends] = (await ctx.dataSource.query(
    `SELECT (SELECT ended_at FROM runs WHERE run_id = $1) AS a_ended, (SELECT started_at FROM runs WHERE run_id = $2) AS c_started`,
    [a, c],
  )) as [{ a_ended: Date; c_started: Date }];
  const handoverMs = ends.c_started.getTime() - ends.a_ended.getTime();
  console.log(`slot handover: run C started ${handoverMs} ms after run A ended`);
  expect(handoverMs).toBeGreaterThanOrEqual(0);
  expect(handoverMs).toBeLessThan(5000);
  expect((await getRun(ctx, key, a)).state).toBe('SUCCEEDED');
  const started = await getRun(ctx, key, c);
  expect(started.state).toBe('INPROGRESS');
  expect(message(started)).toBe('');
  // B and C hold the slots: D still waits.
  expect((await getRun(ctx, key, d)).state).toBe('QUEUED');
  expect(ctx.model.calls(mD)).toHaveLength(0);

  // B ends: D starts.
  release(mB);
  await ctx.model.waitForCalls(mD, 1);
  release(mC);
  release(mD);
  for (const run of [b, c, d]) await waitForState(ctx, key, run, ['SUCCEEDED']);
  expect(ctx.model.calls(mE)).toHaveLength(0);
  expect((await getRun(ctx, key, e)).state).toBe('CANCELLED');
  await recordReplayFixture(ctx, c, 'waits-for-team-slot');
});

test('a follow-up that continues a finished run queues its new turn for a slot too', async () => {
  const { key } = await ctx.newTeamKey();
  const [mF, mG, mH] = ['f', 'g', 'h'].map((m) => uniqueName(`turn-${m}`)) as [string, string, string];
  ctx.model.script(mF, (_req, call) => ({ text: `answer ${call}` }));
  const holds = new Map([mG, mH].map((m) => [m, gate<{ text: string }>()]));
  for (const m of [mG, mH]) ctx.model.script(m, () => ({ hold: holds.get(m)!.promise }));
  const f = await createRun(ctx, key, { prompt: `Quick ${mF}` });
  await waitForState(ctx, key, f, ['SUCCEEDED']);
  const g = await createRun(ctx, key, { prompt: `Hold ${mG}` });
  const h = await createRun(ctx, key, { prompt: `Hold ${mH}` });
  await ctx.model.waitForCalls(mG, 1);
  await ctx.model.waitForCalls(mH, 1);

  const res = await ctx.api.post(`/api/v1/agent/runs/${f}/followups`).set(auth(key)).send({ message: 'And more' });
  expect(res.body).toEqual({
    run_id: f,
    state: 'QUEUED',
    followup_id: expect.any(String),
    outcome: 'handoff_execution',
  });
  await waitingForSlot(ctx, key, f);
  expect(ctx.model.calls(mF)).toHaveLength(1);

  holds.get(mG)!.release({ text: 'done' });
  await ctx.model.waitForCalls(mF, 2);
  holds.get(mH)!.release({ text: 'done' });
  for (const run of [f, g, h]) await waitForState(ctx, key, run, ['SUCCEEDED']);
});

test('TEAM_MAX_RUNS_PER_HOUR=5: the sixth run of the hour is 429 rate_limited with Retry-After and creates nothing', async () => {
  const { key, team, uid } = await ctx.newTeamKey();
  const body = { prompt: 'counted', title: 'counted' };
  const first = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).set('Idempotency-Key', 'hourly-1').send(body);
  expect(first.status).toBe(201);
  const created = [first.body.run_id as string];
  for (let i = 0; i < 4; i++) created.push(await createRun(ctx, key, body));

  const refused = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send(body);
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ error_code: 'rate_limited', status: 429, retryable: true });
  expect(refused.body.detail).toContain('TEAM_MAX_RUNS_PER_HOUR');
  expect(refused.body.detail).toContain('no run was created');
  const retryAfter = Number(refused.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(3600);
  expect(refused.body.detail).toContain(`${retryAfter} seconds`);
  expect(await teamRunCount(ctx, team)).toBe(5);
  // The older name of the endpoint is the same endpoint, limit included.
  expect((await ctx.api.post('/api/v1/agent/run').set(auth(key)).send(body)).status).toBe(429);

  // A retry of a created run is its first answer, not a new run: it is not refused.
  const replay = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).set('Idempotency-Key', 'hourly-1').send(body);
  expect(replay.status).toBe(201);
  expect(replay.body.run_id).toBe(first.body.run_id);

  // Another team is not limited.
  const other = await ctx.newTeamKey();
  expect((await ctx.api.post('/api/v1/agent/runs').set(auth(other.key)).send(body)).status).toBe(201);

  for (const run of created) await waitForState(ctx, key, run, ['SUCCEEDED']);
  expect(await teamRunCount(ctx, team)).toBe(5);
  // No workflow was started for the refused ones: the creator's workflows are the five runs'.
  const workflowIds = async () => {
    const ids: string[] = [];
    for await (const w of ctx.client.workflow.list({ query: `AgentCreator = '${uid}'` })) ids.push(w.workflowId);
    return ids.sort();
  };
  await waitFor(workflowIds, (ids) => ids.length >= 5, 'the five runs in Temporal visibility');
  expect(await workflowIds()).toEqual(created.map(runWorkflowId).sort());
});

test("a factory agent's dispatch counts against TEAM_MAX_RUNS_PER_HOUR: past it the foreman is told in the tool result and finishes; a retried dispatch makes and counts no second child", async () => {
  const { key, team } = await ctx.newTeamKey();
  const factory = await createFactory(ctx, key, [{ type: 'FOREMAN' }, { type: 'IMPLEMENT' }]);
  const [plain, foreman, child] = ['plain', 'foreman', 'child'].map((m) => uniqueName(`hourly-${m}`)) as [
    string,
    string,
    string,
  ];
  ctx.model.script(plain, () => ({ text: 'plain answer' }));
  ctx.model.script(foreman, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: `First ${child}` } },
            { name: 'dispatch_agent', arguments: { agent: 'IMPLEMENT', prompt: 'Second, past the hour' } },
          ],
        }
      : { text: 'I did the second part myself.' },
  );
  ctx.model.script(child, () => ({ text: 'first part done' }));
  // Three runs, then the foreman's: with its first child, the five of the team's hour.
  const plainRuns: string[] = [];
  for (let i = 0; i < 3; i++) plainRuns.push(await createRun(ctx, key, { prompt: `Plain ${i} ${plain}` }));
  const parentId = (await dispatch(ctx, key, factory.uid, { prompt: `Lead ${foreman}` })).body.run_id as string;
  await waitForState(ctx, key, parentId, ['SUCCEEDED'], undefined, 60_000);

  const children = await listRuns(ctx, key, `ancestor_run_id=${parentId}`);
  expect(children).toHaveLength(1);
  const firstChild = children[0]!.run_id;
  const results = (await transcript(ctx, parentId)).filter((e) => e.kind === 'tool_call').map((e) => e.payload);
  expect(results.map((r) => [r.name, r.is_error])).toEqual([
    ['dispatch_agent', false],
    ['dispatch_agent', true],
  ]);
  expect(results[1]!.output).toMatch(/^Not dispatched: Your team created 5 runs within the hour/);
  expect(results[1]!.output).toContain('TEAM_MAX_RUNS_PER_HOUR');
  expect((await getRun(ctx, key, parentId)).status_message).toMatchObject({ message: 'I did the second part myself.' });
  // The child was counted: the team's next run is refused, and there are five.
  expect((await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send({ prompt: 'one more' })).status).toBe(429);
  expect(await teamRunCount(ctx, team)).toBe(5);

  // The dispatch's own retry, through the activity and through the run service's idempotency
  // key of its position: the same child, even at the limit, and nothing more counted.
  const [{ dispatch_key: dispatchKey }] = (await ctx.dataSource.query(
    `SELECT dispatch_key FROM runs WHERE run_id = $1`,
    [firstChild],
  )) as [{ dispatch_key: string }];
  const [turn, step, index] = /^t(\d+)-s(\d+)-c(\d+)$/.exec(dispatchKey)!.slice(1).map(Number) as [
    number,
    number,
    number,
  ];
  const deps = {
    dataSource: ctx.dataSource,
    config: ctx.config,
    logger: createLogger('error', 'test'),
    temporal: ctx.client,
    secretsKeyring: resolveSecretsKeyring(ctx.config),
    blobs: objectBlobStore(ctx.objectStore),
    objectStore: ctx.objectStore,
  };
  const retried = await createOrchestrationActivities(deps as ActivityDeps).prepareChildRun({
    parentRunId: parentId,
    turn,
    step,
    call: {
      index,
      toolCallId: 'retry',
      name: 'dispatch_agent',
      arguments: { agent: 'IMPLEMENT', prompt: `First ${child}` },
    },
  });
  expect(retried).toMatchObject({ ok: true, childRunId: firstChild });
  const parent = (await findRun(ctx.dataSource.manager, parentId))!;
  const replayed = await createRunService(deps).createChildRun(parent, {
    agentUid: factory.agents.IMPLEMENT!,
    prompt: `First ${child}`,
    dispatchKey,
  });
  expect(replayed).toMatchObject({ runId: firstChild, replayed: true });
  expect(await teamRunCount(ctx, team)).toBe(5);
  for (const run of [...plainRuns, firstChild]) await waitForState(ctx, key, run, ['SUCCEEDED']);
});

test('admission is in queue order even when a later run looks first; a child of an unfinished run is admitted under its slot', () =>
  withIdleTeam(async (idle, key, runs) => {
    for (let i = 1; i <= 4; i++) runs.push(await createRun(idle, key, { prompt: `queued ${i}` }));
    const [p1, p2, p3, p4] = runs as [string, string, string, string];
    const admit = (runId: string) => idle.dataSource.transaction((tx) => admitRunTurn(tx, runId, 2));

    const early = await admit(p4);
    expect(early).toMatchObject({ admitted: false });
    expect(early && !early.admitted && early.statusMessage.message).toContain('3 run(s) queued before this one');
    expect(await admit(p1)).toMatchObject({ admitted: true });
    expect(await admit(p1)).toMatchObject({ admitted: true }); // asking again changes nothing
    expect(await admit(p4)).toMatchObject({ admitted: false });
    expect(await admit(p2)).toMatchObject({ admitted: true });
    expect(await admit(p3)).toMatchObject({ admitted: false });
    const teamId = early!.teamId;
    expect(await runsToAdmitNext(idle.dataSource.manager, teamId, 2)).toEqual([]);

    // A child of p1 (unfinished, holding a slot) does not wait for p1's slot to free.
    const child = await createRun(idle, key, { prompt: 'child', parent_run_id: p1 });
    runs.push(child);
    expect(await admit(child)).toMatchObject({ admitted: true });
    expect(await admit(p3)).toMatchObject({ admitted: false });

    // p1 ends: one slot is free, and it is p3's (queued before p4), whoever asks first.
    await idle.dataSource.transaction((tx) => applyTransition(tx, { runId: p1, turn: 1, state: 'SUCCEEDED' }));
    expect(await runsToAdmitNext(idle.dataSource.manager, teamId, 2)).toEqual([p3]);
    expect(await admit(p4)).toMatchObject({ admitted: false });
    expect(await admit(p3)).toMatchObject({ admitted: true });
    expect(await admit(p4)).toMatchObject({ admitted: false });
    expect(await runsToAdmitNext(idle.dataSource.manager, teamId, 2)).toEqual([]);
    // With the quota off, everything is admitted.
    expect(await idle.dataSource.transaction((tx) => admitRunTurn(tx, p4, 0))).toMatchObject({ admitted: true });
  }));

test('a run that asks before an older one starts at once if a slot is left for the older one, never in its slot', () =>
  withIdleTeam(async (idle, key, runs) => {
    for (let i = 1; i <= 3; i++) runs.push(await createRun(idle, key, { prompt: `early ${i}` }));
    const [a1, a2, a3] = runs as [string, string, string];
    const admit = (runId: string) => idle.dataSource.transaction((tx) => admitRunTurn(tx, runId, 2));
    // Two slots: a2 asks first and takes one, leaving the other to a1, which has not asked.
    expect(await admit(a2)).toMatchObject({ admitted: true });
    const refused = await admit(a3);
    expect(refused).toMatchObject({ admitted: false });
    expect(refused && !refused.admitted && refused.statusMessage.message).toContain('1 run(s) queued before this one');
    expect(await admit(a1)).toMatchObject({ admitted: true });
    expect(await admit(a3)).toMatchObject({ admitted: false });
  }));

test('runs of one team asking at the same moment, from separate transactions, never hold more than the limit', () =>
  withIdleTeam(async (idle, key, runs) => {
    for (let i = 1; i <= 5; i++) runs.push(await createRun(idle, key, { prompt: `at once ${i}` }));
    // Queued past the grace and none has asked: no run counts another as ahead, so only the
    // team's lock keeps each decision from missing the slots the others are taking.
    await idle.dataSource.query(
      `UPDATE runs SET queued_at = queued_at - interval '${ADMISSION_GRACE_SECONDS + 50} seconds' WHERE run_id = ANY($1)`,
      [runs],
    );
    const decide = () =>
      Promise.all(runs.map((runId) => idle.dataSource.transaction((tx) => admitRunTurn(tx, runId, 2))));
    const first = await decide();
    expect(first.filter((a) => a?.admitted)).toHaveLength(2);
    // Asked again, together: the same two, and nobody else.
    const again = await decide();
    expect(again.map((a) => a?.admitted)).toEqual(first.map((a) => a?.admitted));
    const [{ holders }] = (await idle.dataSource.query(
      `SELECT count(*)::int AS holders FROM runs WHERE run_id = ANY($1) AND admitted_turn = turn AND holds_slot`,
      [runs],
    )) as [{ holders: number }];
    expect(holders).toBe(2);
  }));

test('a run refused while a slot frees is woken: the wake-up waits for the refusal being decided', () =>
  withIdleTeam(async (idle, key, runs) => {
    for (let i = 1; i <= 3; i++) runs.push(await createRun(idle, key, { prompt: `freeing ${i}` }));
    const [h1, h2, b] = runs as [string, string, string];
    const admit = (runId: string) => idle.dataSource.transaction((tx) => admitRunTurn(tx, runId, 2));
    expect(await admit(h1)).toMatchObject({ admitted: true });
    const held = await admit(h2);
    expect(held).toMatchObject({ admitted: true });
    // b is refused in a transaction that has not committed yet when h1 ends and the team is woken.
    const refusal = idle.dataSource.createQueryRunner();
    await refusal.connect();
    await refusal.startTransaction();
    try {
      expect(await admitRunTurn(refusal.manager, b, 2)).toMatchObject({ admitted: false });
      await idle.dataSource.transaction((tx) => applyTransition(tx, { runId: h1, turn: 1, state: 'SUCCEEDED' }));
      const woken = idle.dataSource.transaction((tx) => runsToAdmitNext(tx, held!.teamId, 2));
      // The wake-up's query waits for the team's lock, which the refusal holds; had it not
      // waited, it would have answered before the refusal was committed, and missed b.
      const first = await Promise.race([
        woken.then(() => 'answered'),
        waitFor(
          async () =>
            (
              (await idle.dataSource.query(
                `SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
              )) as [{ waiting: number }]
            )[0].waiting,
          (waiting) => waiting > 0,
          'the wake-up to wait for the team lock',
        ).then(() => 'waiting'),
      ]);
      await refusal.commitTransaction();
      expect({ first, woken: await woken }).toEqual({ first: 'waiting', woken: [b] });
    } finally {
      await refusal.release();
    }
  }));

test('a free slot wakes only runs that asked for one and were refused; one that has not asked keeps its place unwoken', () =>
  withIdleTeam(async (idle, key, runs) => {
    for (let i = 1; i <= 4; i++) runs.push(await createRun(idle, key, { prompt: `burst ${i}` }));
    const [q1, q2, q3, q4] = runs as [string, string, string, string];
    const admit = (runId: string) => idle.dataSource.transaction((tx) => admitRunTurn(tx, runId, 2));
    const toWake = (teamId: string) => runsToAdmitNext(idle.dataSource.manager, teamId, 2);

    const first = await admit(q1);
    expect(first).toMatchObject({ admitted: true });
    const teamId = first!.teamId;
    // q2 has the free slot but has not asked: it will, and is decided after q1. Nobody is woken.
    expect(await toWake(teamId)).toEqual([]);
    // q4 asks and is refused; the free slot is still q2's, so q4 is not woken ahead of it.
    expect(await admit(q4)).toMatchObject({ admitted: false });
    expect(await toWake(teamId)).toEqual([]);
    expect(await admit(q2)).toMatchObject({ admitted: true });

    // q1 ends: the free slot is q3's, which has not asked either.
    await idle.dataSource.transaction((tx) => applyTransition(tx, { runId: q1, turn: 1, state: 'SUCCEEDED' }));
    expect(await toWake(teamId)).toEqual([]);
    expect(await admit(q3)).toMatchObject({ admitted: true });
    // q2 ends: the slot is q4's, which asked and waits for a wake-up.
    await idle.dataSource.transaction((tx) => applyTransition(tx, { runId: q2, turn: 1, state: 'SUCCEEDED' }));
    expect(await toWake(teamId)).toEqual([q4]);
  }));

test('a QUEUED run that no workflow works on holds the team back only for the grace period', async () => {
  const { key } = await ctx.newTeamKey();
  const holder = uniqueName('holder');
  const held = gate<{ text: string }>();
  ctx.model.script(holder, () => ({ hold: held.promise }));
  // A run whose workflow is gone before it ever asked for a slot (its start was lost), and two
  // runs queued right after it, all while no worker runs: the grace starts for all three at once.
  await ctx.stopWorker();
  const lost = await createRun(ctx, key, { prompt: 'lost start' });
  const first = await createRun(ctx, key, { prompt: `takes the free slot ${holder}` });
  const next = await createRun(ctx, key, { prompt: 'next in line' });
  await ctx.client.workflow.getHandle(runWorkflowId(lost)).terminate('test: the start was lost');
  await ctx.startWorker();

  // Within the grace period it keeps its place: the first later run takes the other slot, and
  // the next waits behind it.
  await ctx.model.waitForCalls(holder, 1);
  expect(message(await waitingForSlot(ctx, key, next))).toContain('queued before this one');

  // When the grace ends, the later run looks again by itself (nobody signals that moment) and goes ahead.
  await waitForState(ctx, key, next, ['SUCCEEDED']);
  expect((await getRun(ctx, key, first)).state).toBe('INPROGRESS');
  held.release({ text: 'done' });
  await waitForState(ctx, key, first, ['SUCCEEDED']);
  const [{ waited }] = (await ctx.dataSource.query(
    `SELECT extract(epoch FROM started_at - created_at)::float AS waited FROM runs WHERE run_id = $1`,
    [next],
  )) as [{ waited: number }];
  expect(waited).toBeLessThan(ADMISSION_GRACE_SECONDS + 5);
  expect((await getRun(ctx, key, lost)).state).toBe('QUEUED');
});

test('a team has at most TEAM_MAX_* schedules, agents, environments and webhooks: past the cap 409, nothing recorded', async () => {
  const capped = await createTestContext({
    worker: false,
    env: {
      TEAM_MAX_SCHEDULES: '2',
      TEAM_MAX_AGENTS: '2',
      TEAM_MAX_ENVIRONMENTS: '2',
      TEAM_MAX_WEBHOOKS: '1',
      OUTBOUND_ALLOWED_PRIVATE_HOSTS: '127.0.0.1',
    },
  });
  try {
    const { key, team } = await capped.newTeamKey('personal', undefined, 'admin');
    const other = await capped.newTeamKey('personal', undefined, 'admin');
    const cases: [string, string, (i: number) => object, number, string][] = [
      [
        '/api/v1/agent/schedules',
        'schedules',
        (i) => ({ name: `s${i}`, cron_schedule: '0 9 * * *', prompt: 'x', enabled: false }),
        2,
        'TEAM_MAX_SCHEDULES',
      ],
      ['/api/v1/agent/identities', 'agents', (i) => ({ name: `a${i}` }), 2, 'TEAM_MAX_AGENTS'],
      [
        '/api/v1/agent/environments',
        'environments',
        (i) => ({ config: { name: `e${i}` } }),
        2,
        'TEAM_MAX_ENVIRONMENTS',
      ],
      ['/api/v1/agent/webhooks', 'webhooks', (i) => ({ url: `http://127.0.0.1:9/h${i}` }), 1, 'TEAM_MAX_WEBHOOKS'],
    ];
    for (const [path, listed, body, cap, variable] of cases) {
      // All at once: the cap holds against a race.
      const answers = await Promise.all(
        Array.from({ length: cap + 3 }, (_, i) => capped.api.post(path).set(auth(key)).send(body(i))),
      );
      expect([path, answers.filter((r) => r.status === 201).length]).toEqual([path, cap]);
      const refused = answers.filter((r) => r.status !== 201);
      expect(refused.map((r) => r.status)).toEqual([409, 409, 409]);
      expect(refused[0]!.body).toMatchObject({ error_code: 'conflict', retryable: false });
      expect(refused[0]!.body.detail).toContain(`(${variable})`);
      const list = await capped.api.get(path).set(auth(key));
      expect((list.body as Record<string, unknown[]>)[listed]).toHaveLength(cap);
      // Another team has a cap of its own.
      expect((await capped.api.post(path).set(auth(other.key)).send(body(99))).status).toBe(201);
    }
    // A key made for an agent named by name (`npm run keys -- create --kind agent --name`) makes
    // that agent under the same cap, and records nothing past it.
    await expect(createApiKeyService(capped).create({ kind: 'agent', name: 'one-more', team })).rejects.toThrow(
      '(TEAM_MAX_AGENTS)',
    );
    const agents = await capped.api.get('/api/v1/agent/identities').set(auth(key));
    expect((agents.body as { agents: unknown[] }).agents).toHaveLength(2);
  } finally {
    await capped.close();
  }
});
