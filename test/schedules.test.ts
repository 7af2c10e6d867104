import { ScheduleNotFoundError, type ScheduleHandle } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createScheduleActivities } from '../activities/schedule-activities';
import { createLogger } from '../core/logger';
import { objectBlobStore } from '../infra/object-store/object-blob-store';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { runWorkflowId, searchAttributes } from '../workflows/run-contract';
import { SCHEDULED_RUN_WORKFLOW_TYPE, temporalScheduleId } from '../workflows/schedule-contract';
import { createEnvironment } from './helpers/environments';
import { recordWorkflowReplayFixture } from './helpers/replay-fixtures';
import { auth, getRun, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const BASE = '/api/v1/agent/schedules';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface ScheduleItem {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  history: { last_ran?: string; next_run?: string };
  last_spawn_error?: string;
  [key: string]: unknown;
}

async function createSchedule(key: string, body: Record<string, unknown>): Promise<ScheduleItem> {
  const res = await ctx.api.post(BASE).set(auth(key)).send(body);
  if (res.status !== 201) throw new Error(`schedule create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as ScheduleItem;
}

async function getSchedule(key: string, id: string): Promise<ScheduleItem> {
  const res = await ctx.api.get(`${BASE}/${id}`).set(auth(key));
  if (res.status !== 200) throw new Error(`schedule get failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as ScheduleItem;
}

async function runsOf(key: string, scheduleId: string): Promise<RunBody[]> {
  const res = await ctx.api.get('/api/v1/agent/runs').query({ schedule_id: scheduleId, limit: 100 }).set(auth(key));
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { runs: RunBody[] }).runs;
}

const temporalHandle = (scheduleId: string): ScheduleHandle =>
  ctx.client.schedule.getHandle(temporalScheduleId(scheduleId));

/** Makes the Temporal Schedule fire every few seconds: a cron fires at most once a minute. */
async function fireEvery(scheduleId: string, every: string): Promise<void> {
  await temporalHandle(scheduleId).update((previous) => ({ ...previous, spec: { intervals: [{ every }] } }));
}

/** From each firing's scheduled time to its run being INPROGRESS, in milliseconds. */
async function fireToInProgressMs(key: string, scheduleId: string): Promise<number[]> {
  const { info } = await temporalHandle(scheduleId).describe();
  const latencies: number[] = [];
  for (const action of info.recentActions) {
    const result = (await ctx.client.workflow.getHandle(action.action.workflow.workflowId).result()) as {
      runId?: string;
    };
    if (!result.runId) continue;
    const run = await waitForState(ctx, key, result.runId, ['INPROGRESS', 'SUCCEEDED']);
    latencies.push(new Date(run.started_at as string).getTime() - action.scheduledAt.getTime());
  }
  return latencies;
}

const quietAgent = { idle_timeout_minutes: 0 };

test('a firing creates a run through the create path: SCHEDULED_AGENT, with its schedule, found by schedule_id', async () => {
  const { key, uid } = await ctx.newTeamKey();
  const marker = uniqueName('scheduled');
  const created = await createSchedule(key, {
    name: 'Nightly check',
    cron_schedule: '0 9 * * *',
    prompt: `Check the build ${marker}`,
    agent_config: { name: 'nightly', ...quietAgent },
    metadata: { origin: 'schedule' },
  });
  expect(created).toMatchObject({
    name: 'Nightly check',
    cron_schedule: '0 9 * * *',
    enabled: true,
    prompt: `Check the build ${marker}`,
    agent_config: { name: 'nightly', idle_timeout_minutes: 0 },
    metadata: { origin: 'schedule' },
    created_by: { uid, type: 'user' },
    scope: { type: 'Team' },
  });
  expect(created.created_at).toMatch(ISO_MS);
  expect(created.history.next_run).toMatch(/T09:00:00\.000Z$/);
  expect(created.history.last_ran).toBeUndefined();

  // The Temporal Schedule an operator sees: cron in UTC, the schedule's id searchable.
  const description = await temporalHandle(created.id).describe();
  expect(description.spec.timezone).toBe('UTC');
  expect(description.state.paused).toBe(false);
  expect(description.memo).toMatchObject({ scheduleId: created.id });
  expect(description.typedSearchAttributes.get(searchAttributes.schedule)).toBe(created.id);
  expect(description.action).toMatchObject({
    workflowType: SCHEDULED_RUN_WORKFLOW_TYPE,
    memo: { scheduleName: 'Nightly check' },
  });

  const firedAt = Date.now();
  await temporalHandle(created.id).trigger();
  const [run] = await waitFor(
    () => runsOf(key, created.id),
    (runs) => runs.length === 1,
    'the scheduled run',
  );
  const inProgress = await waitForState(ctx, key, run!.run_id, ['INPROGRESS', 'SUCCEEDED']);
  console.log(
    `schedule trigger → run INPROGRESS: ${new Date(inProgress.started_at as string).getTime() - firedAt} ms (measured from the trigger call)`,
  );
  const done = await waitForState(ctx, key, run!.run_id, ['SUCCEEDED']);
  expect(done).toMatchObject({
    source: 'SCHEDULED_AGENT',
    schedule: { schedule_id: created.id, schedule_name: 'Nightly check', cron_schedule: '0 9 * * *' },
    prompt: `Check the build ${marker}`,
    title: `Check the build ${marker}`,
    creator: { uid, type: 'user' },
    metadata: { origin: 'schedule' },
    agent_config: { name: 'nightly', model_id: 'openai/test-model', idle_timeout_minutes: 0 },
  });
  // Found by the other filters too, and not by another schedule's id.
  const bySource = await ctx.api.get('/api/v1/agent/runs').query({ source: 'SCHEDULED_AGENT' }).set(auth(key));
  expect((bySource.body as { runs: RunBody[] }).runs.map((r) => r.run_id)).toEqual([run!.run_id]);
  expect(await runsOf(key, '0190aaaa-0000-7000-8000-000000000000')).toEqual([]);

  // The run's own workflow is found by the schedule in Temporal too.
  const runWorkflow = await ctx.client.workflow.getHandle(runWorkflowId(run!.run_id)).describe();
  expect(runWorkflow.typedSearchAttributes.get(searchAttributes.schedule)).toBe(created.id);

  const after = await getSchedule(key, created.id);
  expect(after.history.last_ran).toMatch(ISO_MS);
  expect(after.last_spawn_error).toBeUndefined();

  const { info } = await temporalHandle(created.id).describe();
  const firing = info.recentActions[0]!.action.workflow.workflowId;
  await recordScheduledRunFixture(firing, 'scheduled-run-creates-run');
});

test('pause stops the firings and resume starts them again, in Temporal and in effect', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await createSchedule(key, {
    name: 'Frequent',
    cron_schedule: '*/5 * * * *',
    prompt: `Tick ${uniqueName('tick')}`,
    agent_config: quietAgent,
  });
  await fireEvery(created.id, '3s');
  await waitFor(
    () => runsOf(key, created.id),
    (runs) => runs.length >= 2,
    'two firings',
    20_000,
  );

  const paused = await ctx.api.post(`${BASE}/${created.id}/pause`).set(auth(key));
  expect(paused.status).toBe(200);
  expect(paused.body).toMatchObject({ id: created.id, enabled: false });
  expect((paused.body as ScheduleItem).history.next_run).toBeUndefined();
  const described = await temporalHandle(created.id).describe();
  expect(described.state.paused).toBe(true);
  expect(described.state.note).toMatch(/^Paused by /);

  // A firing taken just before the pause may still be creating its run: let it land, then count.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const whilePaused = (await runsOf(key, created.id)).length;
  await new Promise((resolve) => setTimeout(resolve, 7000));
  expect((await runsOf(key, created.id)).length).toBe(whilePaused);
  expect((await getSchedule(key, created.id)).enabled).toBe(false);

  const resumed = await ctx.api.post(`${BASE}/${created.id}/resume`).set(auth(key));
  expect(resumed.status).toBe(200);
  expect(resumed.body).toMatchObject({ id: created.id, enabled: true });
  expect((await temporalHandle(created.id).describe()).state.paused).toBe(false);
  await waitFor(
    () => runsOf(key, created.id),
    (runs) => runs.length >= whilePaused + 2,
    'firings after resume',
    20_000,
  );

  const latencies = await fireToInProgressMs(key, created.id);
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    `schedule fire time → run INPROGRESS over ${sorted.length} firings: min ${sorted[0]} ms, median ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms`,
  );
  expect(sorted.length).toBeGreaterThanOrEqual(2);

  expect((await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key))).status).toBe(200);
});

test('an update changes the prompt and the cron in Temporal, and the next firing uses them', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await createSchedule(key, { name: 'Before', cron_schedule: '0 9 * * *', prompt: 'Old prompt' });
  const marker = uniqueName('updated');
  const res = await ctx.api
    .put(`${BASE}/${created.id}`)
    .set(auth(key))
    .send({
      name: 'After',
      cron_schedule: '30 6 * * MON-FRI',
      enabled: true,
      prompt: `New prompt ${marker}`,
      agent_config: quietAgent,
    });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    id: created.id,
    name: 'After',
    cron_schedule: '30 6 * * MON-FRI',
    prompt: `New prompt ${marker}`,
    enabled: true,
  });
  expect((res.body as ScheduleItem).history.next_run).toMatch(/T06:30:00\.000Z$/);
  expect(new Date((res.body as ScheduleItem).history.next_run!).getUTCDay()).not.toBe(0);

  const description = await temporalHandle(created.id).describe();
  expect(description.action).toMatchObject({ memo: { scheduleName: 'After', prompt: `New prompt ${marker}` } });
  const calendar = description.spec.calendars?.[0];
  expect(calendar).toMatchObject({
    hour: [{ start: 6, end: 6, step: 1 }],
    minute: [{ start: 30, end: 30, step: 1 }],
    dayOfWeek: [{ start: 'MONDAY', end: 'FRIDAY', step: 1 }],
  });

  await temporalHandle(created.id).trigger();
  const [run] = await waitFor(
    () => runsOf(key, created.id),
    (runs) => runs.length === 1,
    'the run after the update',
  );
  expect(run).toMatchObject({
    prompt: `New prompt ${marker}`,
    schedule: { schedule_id: created.id, schedule_name: 'After', cron_schedule: '30 6 * * MON-FRI' },
  });

  // `enabled: false` pauses it in Temporal.
  const paused = await ctx.api
    .put(`${BASE}/${created.id}`)
    .set(auth(key))
    .send({ name: 'After', cron_schedule: '30 6 * * MON-FRI', enabled: false, prompt: 'Paused prompt' });
  expect(paused.status).toBe(200);
  expect(paused.body).toMatchObject({ enabled: false, prompt: 'Paused prompt' });
  expect((await temporalHandle(created.id).describe()).state.paused).toBe(true);
  await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key));
});

test('delete removes the Temporal Schedule and the row', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await createSchedule(key, { name: 'Doomed', cron_schedule: '0 0 1 1 *', prompt: 'Never' });
  const res = await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key));
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ success: true });
  await expect(temporalHandle(created.id).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  expect(await ctx.dataSource.query(`SELECT 1 FROM schedules WHERE schedule_id = $1`, [created.id])).toEqual([]);
  expect((await ctx.api.get(`${BASE}/${created.id}`).set(auth(key))).status).toBe(404);
  expect((await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key))).status).toBe(404);
  const list = await ctx.api.get(BASE).set(auth(key));
  expect(list.body).toEqual({ schedules: [], page_info: { has_next_page: false } });
});

test("another team's schedule is not found on any route, and stays as it was", async () => {
  const owner = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  const created = await createSchedule(owner.key, { name: 'Mine', cron_schedule: '0 9 * * *', prompt: 'Mine' });
  const update = { name: 'Theirs', cron_schedule: '0 10 * * *', enabled: false, prompt: 'Theirs' };
  const responses = [
    await ctx.api.get(`${BASE}/${created.id}`).set(auth(other.key)),
    await ctx.api.put(`${BASE}/${created.id}`).set(auth(other.key)).send(update),
    await ctx.api.post(`${BASE}/${created.id}/pause`).set(auth(other.key)),
    await ctx.api.post(`${BASE}/${created.id}/resume`).set(auth(other.key)),
    await ctx.api.delete(`${BASE}/${created.id}`).set(auth(other.key)),
  ];
  for (const res of responses) {
    expect([res.status, res.body.error_code]).toEqual([404, 'resource_not_found']);
    expect(res.body.detail).toBe(`No schedule ${created.id}.`);
  }
  expect((await ctx.api.get(BASE).set(auth(other.key))).body).toEqual({
    schedules: [],
    page_info: { has_next_page: false },
  });
  // Creating with the same name in the other team makes a separate schedule.
  const theirs = await createSchedule(other.key, { name: 'Mine', cron_schedule: '0 9 * * *', prompt: 'Theirs' });
  const ownList = (await ctx.api.get(BASE).set(auth(owner.key))).body as { schedules: ScheduleItem[] };
  expect(ownList.schedules.map((s) => s.id)).toEqual([created.id]);
  expect(await getSchedule(owner.key, created.id)).toMatchObject({ name: 'Mine', enabled: true, prompt: 'Mine' });
  // An id that is no uuid at all is just as unknown.
  expect((await ctx.api.get(`${BASE}/not-a-schedule`).set(auth(owner.key))).status).toBe(404);
  for (const [key, id] of [
    [owner.key, created.id],
    [other.key, theirs.id],
  ] as const) {
    await ctx.api.delete(`${BASE}/${id}`).set(auth(key));
  }
});

test('bad requests are refused with a 400 that says what to fix', async () => {
  const { key } = await ctx.newTeamKey();
  const post = (body: Record<string, unknown>) => ctx.api.post(BASE).set(auth(key)).send(body);
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { name: 'x', cron_schedule: '0 25 * * *', prompt: 'p' },
      /`cron_schedule`: the hour field \(field 2\) "25": 25 is out of range; it takes 0-23/,
    ],
    [
      { name: 'x', cron_schedule: 'every day', prompt: 'p' },
      /`cron_schedule`: expected five fields .* e\.g\. "0 9 \* \* 1-5".*got 2 fields/,
    ],
    [
      { name: 'x', cron_schedule: '0 9 * * MON-FRX', prompt: 'p' },
      /day of week field \(field 5\) "MON-FRX": "FRX" is not a number; it takes 0-6 or SUN-SAT/,
    ],
    [
      { name: 'x', cron_schedule: '*/0 * * * *', prompt: 'p' },
      /the step in "\*\/0" must be a whole number from 1 to 60/,
    ],
    [{ name: 'x', cron_schedule: '0 17-9 * * *', prompt: 'p' }, /the range "17-9" runs backwards/],
    // A step Temporal would read as a negative 32-bit number (it answered INVALID_ARGUMENT: a 500).
    [
      { name: 'x', cron_schedule: '0 0 1-31/4294967295 * *', prompt: 'p' },
      /the step in "1-31\/4294967295" must be a whole number from 1 to 31/,
    ],
    [{ name: 'x', cron_schedule: '0 0 * 3-DEC *', prompt: 'p' }, /the range "3-DEC" mixes a number and a name/],
    [{ name: 'x', cron_schedule: '0 9 * * *' }, /`prompt`: required/],
    [{ cron_schedule: '0 9 * * *', prompt: 'p' }, /`name` is required/],
    [{ name: 'x', cron_schedule: '0 9 * * *', prompt: 'p', colour: 'red' }, /Unknown field `colour`/],
    [
      { name: 'x', cron_schedule: '0 9 * * *', prompt: 'p', agent_config: { colour: 'red' } },
      /Unknown field `agent_config.colour`/,
    ],
  ];
  for (const [body, detail] of cases) {
    const res = await post(body);
    expect([res.status, res.body.error_code, res.body.detail]).toEqual([
      400,
      'invalid_request',
      expect.stringMatching(detail),
    ]);
  }
  const plan = await post({ name: 'x', cron_schedule: '0 9 * * *', prompt: 'p', mode: 'plan' });
  expect([plan.status, plan.body.error_code]).toEqual([400, 'feature_not_available']);
  const missingEnv = await post({
    name: 'x',
    cron_schedule: '0 9 * * *',
    prompt: 'p',
    agent_config: { environment_id: 'nope' },
  });
  expect([missingEnv.status, missingEnv.body.detail]).toEqual([
    404,
    expect.stringMatching(/`agent_config.environment_id`/),
  ]);

  const created = await createSchedule(key, {
    name: 'Valid',
    cron_schedule: '*/15 9-17 * JAN-MAR MON-FRI',
    prompt: 'p',
  });
  const noEnabled = await ctx.api
    .put(`${BASE}/${created.id}`)
    .set(auth(key))
    .send({ name: 'x', cron_schedule: '0 9 * * *', prompt: 'p' });
  expect([noEnabled.status, noEnabled.body.detail]).toEqual([400, '`enabled` is required.']);
  const team = await ctx.api
    .put(`${BASE}/${created.id}`)
    .set(auth(key))
    .send({ name: 'x', cron_schedule: '0 9 * * *', prompt: 'p', enabled: true, team: true });
  expect([team.status, team.body.detail]).toEqual([400, 'Unknown field `team`.']);
  const pauseBody = await ctx.api.post(`${BASE}/${created.id}/pause`).set(auth(key)).send({ now: true });
  expect(pauseBody.status).toBe(400);
  // Nothing was recorded by the refused requests.
  expect(((await ctx.api.get(BASE).set(auth(key))).body as { schedules: unknown[] }).schedules).toHaveLength(1);
  await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key));
});

test('a firing that cannot create its run records last_spawn_error; the next one that can clears it', async () => {
  const { key } = await ctx.newTeamKey();
  const environmentId = await createEnvironment(ctx, key, { name: uniqueName('env') });
  const created = await createSchedule(key, {
    name: 'Broken later',
    cron_schedule: '0 9 * * *',
    prompt: 'Needs its environment',
    agent_config: { environment_id: environmentId, ...quietAgent },
  });
  expect((await ctx.api.delete(`/api/v1/agent/environments/${environmentId}`).set(auth(key))).status).toBe(204);

  await temporalHandle(created.id).trigger();
  const broken = await waitFor(
    () => getSchedule(key, created.id),
    (s) => s.last_spawn_error !== undefined,
    'last_spawn_error',
  );
  expect(broken.last_spawn_error).toMatch(/created no run: `config.environment_id`: no environment/);
  expect(await runsOf(key, created.id)).toEqual([]);
  // The firing's workflow failed (visible to an operator), without retrying a refusal.
  const { info } = await temporalHandle(created.id).describe();
  const firing = ctx.client.workflow.getHandle(info.recentActions[0]!.action.workflow.workflowId);
  await expect(firing.result()).rejects.toThrow();
  await recordScheduledRunFixture(firing.workflowId, 'scheduled-run-refused');

  const fixed = await ctx.api.put(`${BASE}/${created.id}`).set(auth(key)).send({
    name: 'Fixed',
    cron_schedule: '0 9 * * *',
    enabled: true,
    prompt: 'No environment now',
    agent_config: quietAgent,
  });
  expect(fixed.status).toBe(200);
  expect((fixed.body as ScheduleItem).last_spawn_error).toBe(broken.last_spawn_error);
  await temporalHandle(created.id).trigger();
  await waitFor(
    () => runsOf(key, created.id),
    (runs) => runs.length === 1,
    'the run after the fix',
  );
  await waitFor(
    () => getSchedule(key, created.id),
    (s) => s.last_spawn_error === undefined,
    'a cleared spawn error',
  );
  await ctx.api.delete(`${BASE}/${created.id}`).set(auth(key));
});

test("in restore mode a firing of a schedule the database lacks creates nothing and leaves its Temporal Schedule (without it, the next test's firing deletes it)", async () => {
  const { key } = await ctx.newTeamKey();
  const created = await createSchedule(key, { name: 'Made after the backup', cron_schedule: '0 9 * * *', prompt: 'p' });
  await ctx.dataSource.query(`DELETE FROM schedules WHERE schedule_id = $1`, [created.id]);
  const { createScheduledRun } = createScheduleActivities({
    dataSource: ctx.dataSource,
    config: { ...ctx.config, restoreMode: true },
    logger: createLogger('error', 'test'),
    temporal: ctx.client,
    secretsKeyring: resolveSecretsKeyring(ctx.config),
    blobs: objectBlobStore(ctx.objectStore),
    objectStore: ctx.objectStore,
  });
  const firingId = `${temporalScheduleId(created.id)}-2026-01-02T03:04:05Z`;
  expect(await new MockActivityEnvironment().run(createScheduledRun, { scheduleId: created.id, firingId })).toEqual({
    skipped: expect.stringMatching(
      /^The firing of 2026-01-02T03:04:05Z created no run: The service is in restore mode/,
    ),
  });
  expect((await temporalHandle(created.id).describe()).scheduleId).toBe(temporalScheduleId(created.id));
  expect(await runsOf(key, created.id)).toEqual([]);
  await temporalHandle(created.id).delete();
});

test('a Temporal Schedule whose row is gone deletes itself at its next firing', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await createSchedule(key, { name: 'Orphan', cron_schedule: '0 9 * * *', prompt: 'p' });
  await ctx.dataSource.query(`DELETE FROM schedules WHERE schedule_id = $1`, [created.id]);
  await temporalHandle(created.id).trigger();
  await waitFor(
    () =>
      temporalHandle(created.id)
        .describe()
        .then(
          () => 'exists',
          (err: unknown) => (err instanceof ScheduleNotFoundError ? 'gone' : 'error'),
        ),
    (state) => state === 'gone',
    'the orphaned Temporal Schedule to be deleted',
  );
  expect(await runsOf(key, created.id)).toEqual([]);
});

test("a harness in agent_config is checked when the schedule is made and is the harness of the runs it creates, over its agent's", async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  for (const [name, value] of [
    ['sched-claude', 'sk-ant-api-scheduled'],
    ['sched-codex', 'sk-openai-scheduled'],
  ]) {
    expect((await ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send({ name, value })).status).toBe(201);
  }
  const agent = await ctx.api
    .post('/api/v1/agent/identities')
    .set(auth(key))
    .send({
      name: uniqueName('codex-agent'),
      harness: { type: 'codex', reasoning_level: 'low' },
      harness_auth_secrets: { codex_auth_secret_name: 'sched-codex' },
    });
  expect(agent.status).toBe(201);
  const agentUid = (agent.body as { uid: string }).uid;
  /** The agent_config of the run a trigger of the schedule creates; the run is then cancelled. */
  const firedConfig = async (scheduleId: string) => {
    await temporalHandle(scheduleId).trigger();
    const [run] = await waitFor(
      () => runsOf(key, scheduleId),
      (runs) => runs.length === 1,
      'the scheduled run',
    );
    const config = (await getRun(ctx, key, run!.run_id)).agent_config;
    await ctx.api.post(`/api/v1/agent/runs/${run!.run_id}/cancel`).set(auth(key));
    await waitForState(ctx, key, run!.run_id, ['CANCELLED', 'FAILED', 'SUCCEEDED', 'ERROR']);
    await ctx.api.delete(`${BASE}/${scheduleId}`).set(auth(key));
    return config;
  };

  const claude = {
    harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
    harness_auth_secrets: { claude_auth_secret_name: 'sched-claude' },
  };
  const own = await createSchedule(key, {
    name: 'Claude nightly',
    cron_schedule: '0 9 * * *',
    prompt: 'Check the build',
    agent_uid: agentUid,
    agent_config: { ...claude, ...quietAgent },
  });
  expect(own.agent_config).toEqual({ ...claude, ...quietAgent });
  expect(await getSchedule(key, own.id)).toMatchObject({ agent_config: { ...claude, ...quietAgent } });
  expect(await firedConfig(own.id)).toMatchObject({ ...claude, ...quietAgent, model_id: 'openai/test-model' });

  // Without a harness of its own, the run takes its agent's; `oz` named is the schedule's own choice.
  const inherits = await createSchedule(key, {
    name: 'Agent nightly',
    cron_schedule: '0 9 * * *',
    prompt: 'Check the build',
    agent_uid: agentUid,
    agent_config: quietAgent,
  });
  expect(await firedConfig(inherits.id)).toMatchObject({
    harness: { type: 'codex', reasoning_level: 'low' },
    harness_auth_secrets: { codex_auth_secret_name: 'sched-codex' },
  });
  const oz = await createSchedule(key, {
    name: 'Own loop nightly',
    cron_schedule: '0 9 * * *',
    prompt: 'Check the build',
    agent_uid: agentUid,
    agent_config: { harness: { type: 'oz' }, ...quietAgent },
  });
  expect(oz.agent_config).toEqual({ harness: { type: 'oz' }, ...quietAgent });
  const ozConfig = await firedConfig(oz.id);
  expect(ozConfig).not.toHaveProperty('harness');
  expect(ozConfig).not.toHaveProperty('harness_auth_secrets');

  // Refused when made, as its runs would be, naming the field of the schedule; nothing recorded.
  const refused: [Record<string, unknown>, string][] = [
    [
      { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'missing' } },
      '`agent_config.harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "missing". Store it first with `POST /api/v1/agent/secrets` (or `agent-runs secrets set missing`).',
    ],
    [
      { harness: { type: 'codex', reasoning_level: 'extreme' } },
      '`agent_config.harness.reasoning_level`: Codex CLI takes minimal, low, medium, high, not "extreme".',
    ],
    [
      { harness_auth_secrets: { codex_auth_secret_name: 'sched-codex' } },
      '`agent_config.harness_auth_secrets.codex_auth_secret_name` applies only when `agent_config.harness.type` is "codex"; this schedule\'s harness is "oz". Leave it out, or set the harness.',
    ],
  ];
  for (const [agentConfig, detail] of refused) {
    const res = await ctx.api
      .post(BASE)
      .set(auth(key))
      .send({ name: 'x', cron_schedule: '0 9 * * *', prompt: 'p', agent_config: agentConfig });
    expect([res.status, res.body.error_code, res.body.detail]).toEqual([400, 'invalid_request', detail]);
  }
  expect(((await ctx.api.get(BASE).set(auth(key))).body as { schedules: unknown[] }).schedules).toEqual([]);
});

/** With RECORD_REPLAY_FIXTURES=1, keeps a firing's history for the replay test. */
async function recordScheduledRunFixture(workflowId: string, scenario: string): Promise<void> {
  await recordWorkflowReplayFixture(ctx, workflowId, scenario);
}
