import { execFile } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../core/logger';
import { appendAuditEvent } from '../db/audit-events';
import { findTeamId } from '../db/team-reads';
import { createAuditLog } from '../services/audit/audit-log';
import { createApiKeyService } from '../services/keys/api-key-service';
import { maintenanceScheduleId } from '../workflows/maintenance-contract';
import { temporalScheduleId } from '../workflows/schedule-contract';
import { keysCli, lastLine } from './helpers/operator-commands';
import { auth } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * The audit log (`GET /audit-events`, `npm run audit -- verify`): every change through the API
 * and the operator commands is recorded with who, what, which and from where, refusals too, never
 * a secret's value; each team's chain catches an edited or removed event; retention prunes the
 * oldest and the chain still verifies.
 */

const ROOT = path.resolve(__dirname, '..');
const lines: string[] = [];
let ctx: TestContext;
beforeAll(async () => {
  const logDestination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  ctx = await createTestContext({ env: { LOG_LEVEL: 'info', AUDIT_RETENTION_DAYS: '30' }, logDestination });
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(180_000);

interface Event {
  event_id: string;
  occurred_at: string;
  action: string;
  outcome: string;
  actor: { type: string; uid: string; key_prefix: string | null };
  resource: { type: string; id: string | null };
  request_id: string | null;
  client_address: string | null;
  details?: Record<string, unknown>;
  chain: { seq: number; prev_hash: string; hash: string };
}

async function events(key: string, query: Record<string, string | number> = {}): Promise<Event[]> {
  const res = await ctx.api.get('/api/v1/audit-events').query(query).set(auth(key));
  expect(res.status).toBe(200);
  return (res.body as { events: Event[] }).events;
}

// Keys are `ark_<8-char public prefix>_<secret>`; the prefix's characters include `_` and `-`.
const prefixOf = (key: string) => key.slice(0, 'ark_'.length + 8);

function auditCli(...args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bin/audit.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: ctx.stack.databaseUrl }, timeout: 60_000 },
      (err, stdout) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout }),
    );
  });
}

test('every change through the API is recorded with who, what, which and from where; refusals too; never a secret', async () => {
  const team = uniqueName('audited');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const member = await ctx.newTeamKey('personal', team, 'member');
  const secretValue = `sk-ant-${uniqueName('never-recorded')}`;

  const stored = await ctx.api
    .post('/api/v1/agent/secrets')
    .set({ ...auth(admin.key), 'x-request-id': 'req-secret-1' })
    .send({ name: 'anthropic', value: secretValue });
  expect(stored.status).toBe(201);
  const hook = await ctx.api
    .post('/api/v1/agent/webhooks')
    .set(auth(admin.key))
    .send({ url: 'https://93.184.216.34/h' });
  expect(hook.status).toBe(201);
  expect((await ctx.api.delete(`/api/v1/agent/webhooks/${hook.body.id as string}`).set(auth(admin.key))).status).toBe(
    204,
  );
  expect(
    (await ctx.api.post('/api/v1/agent/webhooks').set(auth(member.key)).send({ url: 'https://93.184.216.34/h' }))
      .status,
  ).toBe(403);
  expect((await ctx.api.post('/api/v1/agent/environments').set(auth(admin.key)).send({})).status).toBe(400);
  const run = await ctx.api.post('/api/v1/agent/runs').set(auth(member.key)).send({ prompt: 'audited run' });
  expect(run.status).toBe(201);
  const runId = run.body.run_id as string;
  expect((await ctx.api.delete(`/api/v1/agent/runs/${runId}`).set(auth(member.key))).status).toBe(403);

  const recorded = await events(admin.key);
  const summary = recorded.map((e) => [e.action, e.outcome, e.actor.uid, e.resource.type, e.resource.id]);
  expect(summary).toEqual([
    ['run.delete', 'denied', member.uid, 'run', runId],
    ['run.create', 'success', member.uid, 'run', runId],
    ['environment.create', 'failed', admin.uid, 'environment', null],
    ['webhook.create', 'denied', member.uid, 'webhook', null],
    ['webhook.delete', 'success', admin.uid, 'webhook', hook.body.id],
    ['webhook.create', 'success', admin.uid, 'webhook', hook.body.id],
    ['secret.write', 'success', admin.uid, 'secret', 'anthropic'],
  ]);
  const secretEvent = recorded.at(-1)!;
  expect(secretEvent).toMatchObject({
    actor: { type: 'user', uid: admin.uid, key_prefix: prefixOf(admin.key) },
    request_id: 'req-secret-1',
    client_address: expect.stringMatching(/127\.0\.0\.1/),
  });
  expect(recorded[0]!.details).toMatchObject({ status: 403, error: 'not_authorized', reason: expect.any(String) });
  expect(recorded[2]!.details).toMatchObject({ status: 400, error: 'invalid_request' });
  // Linked in order, newest first: each event names the hash of the one before it.
  for (let i = 0; i < recorded.length - 1; i++) {
    expect(recorded[i]!.chain.prev_hash).toBe(recorded[i + 1]!.chain.hash);
    expect(recorded[i]!.chain.seq).toBe(recorded[i + 1]!.chain.seq + 1);
  }
  // Streamed to the logs as structured events too, and the secret is in neither.
  const logged = lines.filter((l) => l.includes('"audit event"') && l.includes(admin.uid));
  expect(logged.some((l) => l.includes('"secret.write"') && l.includes(secretEvent.chain.hash))).toBe(true);
  expect(JSON.stringify(recorded)).not.toContain(secretValue);
  expect(lines.some((l) => l.includes(secretValue))).toBe(false);
});

test('a member cannot read the audit log; an admin reads its own team only', async () => {
  const team = uniqueName('private-audit');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const member = await ctx.newTeamKey('personal', team, 'member');
  const stranger = await ctx.newTeamKey('personal', uniqueName('stranger'), 'admin');
  await ctx.api.post('/api/v1/agent/runs').set(auth(member.key)).send({ prompt: 'mine' });
  expect((await ctx.api.get('/api/v1/audit-events').set(auth(member.key))).status).toBe(403);
  expect((await events(admin.key)).map((e) => e.action)).toEqual(['run.create']);
  expect(await events(stranger.key)).toEqual([]);
});

test('filters and pages: action (and families), actor, resource, time window; a bad filter is 400', async () => {
  const team = uniqueName('filtered');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const member = await ctx.newTeamKey('personal', team, 'member');
  const before = new Date().toISOString();
  const hooks: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await ctx.api
      .post('/api/v1/agent/webhooks')
      .set(auth(admin.key))
      .send({ url: `https://93.184.216.34/${i}` });
    hooks.push(res.body.id as string);
  }
  await ctx.api.delete(`/api/v1/agent/webhooks/${hooks[0]}`).set(auth(admin.key));
  await ctx.api.post('/api/v1/agent/runs').set(auth(member.key)).send({ prompt: 'filtered' });

  expect((await events(admin.key, { action: 'webhook.delete' })).map((e) => e.resource.id)).toEqual([hooks[0]]);
  expect((await events(admin.key, { action: 'webhook.*' })).length).toBe(4);
  expect((await events(admin.key, { actor_uid: member.uid })).map((e) => e.action)).toEqual(['run.create']);
  expect((await events(admin.key, { resource_id: hooks[0]! })).map((e) => e.action)).toEqual([
    'webhook.delete',
    'webhook.create',
  ]);
  expect((await events(admin.key, { created_before: before })).length).toBe(0);
  expect((await events(admin.key, { created_after: before })).length).toBe(5);

  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const res = await ctx.api
      .get('/api/v1/audit-events')
      .query({ limit: 2, ...(cursor ? { cursor } : {}) })
      .set(auth(admin.key));
    seen.push(...(res.body.events as Event[]).map((e) => e.event_id));
    cursor = res.body.page_info.next_cursor as string | undefined;
  } while (cursor);
  expect(seen).toEqual((await events(admin.key)).map((e) => e.event_id));
  expect(new Set(seen).size).toBe(5);

  for (const query of [{ action: 'drop table' }, { created_after: 'yesterday' }, { limit: 0 }, { actor: 'x' }]) {
    const res = await ctx.api.get('/api/v1/audit-events').query(query).set(auth(admin.key));
    expect([JSON.stringify(query), res.status]).toEqual([JSON.stringify(query), 400]);
  }
});

test('a refused expired key is recorded as its holder; operator commands are recorded as the operator', async () => {
  const team = uniqueName('operated');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const created = await keysCli(
    ctx,
    'create',
    '--kind',
    'personal',
    '--name',
    'bot',
    '--team',
    team,
    '--expires-in',
    '2s',
  );
  expect(created.code).toBe(0);
  const shortLived = lastLine(created.stdout);
  await waitFor(
    () => ctx.api.get('/api/v1/agent/runs').set(auth(shortLived)),
    (res) => res.status === 401,
    'the key to expire',
  );
  expect((await ctx.api.post('/api/v1/agent/runs').set(auth(shortLived)).send({ prompt: 'too late' })).status).toBe(
    401,
  );
  const roleChange = await new Promise<number>((resolve) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'bin/keys.ts', 'set-role', prefixOf(admin.key), 'admin'],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: ctx.stack.databaseUrl, AUDIT_OPERATOR: 'alice@ops' } },
      (err) => resolve(err ? 1 : 0),
    ),
  );
  expect(roleChange).toBe(0);

  const recorded = await events(admin.key);
  expect(recorded.map((e) => [e.action, e.outcome, e.actor.type, e.resource.type])).toEqual([
    ['key.role_change', 'success', 'operator', 'api_key'],
    ['run.create', 'denied', 'user', 'run'],
    ['key.create', 'success', 'operator', 'api_key'],
  ]);
  expect(recorded[0]).toMatchObject({ actor: { uid: 'alice@ops' }, details: { from: 'admin', to: 'admin' } });
  expect(recorded[1]!.actor.key_prefix).toBe(prefixOf(shortLived));
  expect(recorded[1]!.details).toMatchObject({ status: 401, reason: expect.stringContaining('expired') });
  expect(recorded[2]!.details).toMatchObject({ prefix: prefixOf(shortLived), expires_at: expect.any(String) });
  expect(JSON.stringify(recorded)).not.toContain(shortLived);
});

test('events are append-only; verify passes an intact chain and catches an edited, a removed and a dropped newest event', async () => {
  const team = uniqueName('tampered');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  for (let i = 0; i < 4; i++) {
    await ctx.api
      .post('/api/v1/agent/webhooks')
      .set(auth(admin.key))
      .send({ url: `https://93.184.216.34/t${i}` });
  }
  const teamId = (await findTeamId(ctx.dataSource.manager, team))!;
  for (const statement of [
    `UPDATE audit_events SET outcome = 'denied' WHERE team_id = $1`,
    `DELETE FROM audit_events WHERE team_id = $1`,
  ]) {
    await expect(ctx.dataSource.query(statement, [teamId])).rejects.toThrow(/append-only/);
  }
  const intact = await auditCli('verify', '--team', team);
  expect([intact.code, intact.stdout]).toEqual([0, expect.stringContaining('4 events, chain intact')]);

  // Someone with the database's superuser edits around the trigger, as an attacker would.
  const tamper = (sql: string) =>
    ctx.dataSource.transaction(async (tx) => {
      await tx.query(`SET LOCAL session_replication_role = replica`);
      await tx.query(sql, [teamId]);
    });
  await tamper(`UPDATE audit_events SET actor_uid = 'someone-else' WHERE team_id = $1 AND seq = 2`);
  const edited = await auditCli('verify', '--team', teamId);
  expect([edited.code, edited.stdout]).toEqual([1, expect.stringMatching(/seq 2 .*altered/)]);

  await tamper(`DELETE FROM audit_events WHERE team_id = $1 AND seq IN (2, 4)`);
  const removed = await auditCli('verify', '--team', team);
  expect(removed.code).toBe(1);
  expect(removed.stdout).toMatch(/seq 3 .*events 2–2 are missing/);
  expect(removed.stdout).toMatch(/newest events \(through seq 4\) are missing/);
});

test('AUDIT_RETENTION_DAYS: the maintenance firing prunes the oldest events and the chain still verifies', async () => {
  const team = uniqueName('retained');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const teamId = (await findTeamId(ctx.dataSource.manager, team))!;
  const old = (days: number, n: number) =>
    appendAuditEvent(ctx.dataSource.manager, {
      teamId,
      eventId: crypto.randomUUID(),
      occurredAt: new Date(Date.now() - days * 86_400_000),
      action: 'schedule.create',
      outcome: 'success',
      actor: { type: 'user', uid: admin.uid },
      resource: { type: 'schedule', id: `old-${n}` },
    });
  await old(90, 1);
  await old(60, 2);
  await old(31, 3);
  await ctx.api.post('/api/v1/agent/webhooks').set(auth(admin.key)).send({ url: 'https://93.184.216.34/kept' });

  const schedule = ctx.client.schedule.getHandle(maintenanceScheduleId(ctx.config.temporal.taskQueue));
  const before = (await schedule.describe()).info.recentActions.length;
  await schedule.trigger();
  const described = await waitFor(
    () => schedule.describe(),
    (d) => d.info.recentActions.length > before,
    'the maintenance firing',
  );
  const firing = described.info.recentActions.at(-1)!.action.workflow.workflowId;
  const result = (await ctx.client.workflow.getHandle(firing).result()) as { auditEventsPruned?: number };
  expect(result.auditEventsPruned).toBeGreaterThanOrEqual(3);

  expect((await events(admin.key)).map((e) => [e.action, e.chain.seq])).toEqual([['webhook.create', 4]]);
  const verified = await auditCli('verify', '--team', team);
  expect([verified.code, verified.stdout]).toEqual([0, expect.stringContaining('1 events, chain intact')]);
});

test('rotating and revoking through the key service are recorded, never the key', async () => {
  const team = uniqueName('keyed');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const log = createAuditLog({ dataSource: ctx.dataSource, logger: createLogger('error', 'test') });
  const keys = createApiKeyService({ ...ctx, audit: { log, actor: { type: 'operator', uid: 'bob' } } });
  const created = await keys.create({ kind: 'personal', name: 'rotating', team });
  const rotated = await keys.rotate(created.id, { graceSeconds: 60 });
  await keys.revoke(rotated.created.id);
  const recorded = await events(admin.key);
  expect(recorded.map((e) => [e.action, e.actor.uid, e.resource.id])).toEqual([
    ['key.revoke', 'bob', rotated.created.id],
    ['key.rotate', 'bob', rotated.created.id],
    ['key.create', 'bob', created.id],
  ]);
  expect(recorded[1]!.details).toMatchObject({ replaces: created.id, old_key_until: expect.any(String) });
  expect(JSON.stringify(recorded)).not.toContain(created.rawKey);
  expect(JSON.stringify(recorded)).not.toContain(rotated.created.rawKey);
});

test("a schedule's firing is recorded as the scheduler's, on behalf of the schedule's creator", async () => {
  const team = uniqueName('scheduled-audit');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const schedule = await ctx.api
    .post('/api/v1/agent/schedules')
    .set(auth(admin.key))
    .send({
      name: 'nightly',
      cron_schedule: '0 9 * * *',
      prompt: 'audited firing',
      agent_config: { idle_timeout_minutes: 0 },
    });
  expect(schedule.status).toBe(201);
  const scheduleId = schedule.body.id as string;
  await ctx.client.schedule.getHandle(temporalScheduleId(scheduleId)).trigger();
  const recorded = await waitFor(
    () => events(admin.key, { actor_uid: 'scheduler' }),
    (found) => found.length > 0,
    "the scheduler's run.create",
  );
  expect(recorded[0]).toMatchObject({
    action: 'run.create',
    outcome: 'success',
    actor: { type: 'service', uid: 'scheduler', key_prefix: null },
    resource: { type: 'run', id: expect.any(String) },
    details: { source: 'SCHEDULED_AGENT', schedule_id: scheduleId, on_behalf_of: admin.uid },
  });
  expect((await events(admin.key, { resource_id: scheduleId })).map((e) => e.action)).toEqual(['schedule.create']);
});
