import type { Response } from 'supertest';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

interface Key {
  key: string;
  uid: string;
  team: string;
  id: string;
}

const create = (key: string, body: object, idempotencyKey?: string, path = '/api/v1/agent/runs') => {
  const req = ctx.api.post(path).set(auth(key));
  if (idempotencyKey !== undefined) req.set('Idempotency-Key', idempotencyKey);
  return req.send(body);
};

const followup = (key: string, runId: string, body: object, idempotencyKey?: string) => {
  const req = ctx.api.post(`/api/v1/agent/runs/${runId}/followups`).set(auth(key));
  if (idempotencyKey !== undefined) req.set('Idempotency-Key', idempotencyKey);
  return req.send(body);
};

async function runsOfTeam(owner: Key): Promise<string[]> {
  const rows = (await ctx.dataSource.query(
    `SELECT r.run_id FROM runs r JOIN api_keys k ON k.team_id = r.team_id WHERE k.id = $1 ORDER BY r.run_id`,
    [owner.id],
  )) as { run_id: string }[];
  return rows.map((r) => r.run_id);
}

async function followupsOf(runId: string): Promise<{ message: string; mode: string }[]> {
  return (await ctx.dataSource.query(`SELECT message, mode FROM followups WHERE run_id = $1 ORDER BY seq`, [
    runId,
  ])) as { message: string; mode: string }[];
}

function expectConflict(res: Response): void {
  expect({
    status: res.status,
    error_code: (res.body as { error_code?: string }).error_code,
    retryable: (res.body as { retryable?: boolean }).retryable,
    shouldRetry: res.headers['x-should-retry'],
    contentType: res.headers['content-type'],
  }).toEqual({
    status: 409,
    error_code: 'conflict',
    // The same key with another body can never succeed: retrying it is pointless.
    retryable: false,
    shouldRetry: 'false',
    contentType: expect.stringMatching(/^application\/problem\+json/),
  });
}

describe('Idempotency-Key on create', () => {
  test('the same key and body returns the first response and creates and starts exactly one run', async () => {
    const owner = await ctx.newTeamKey();
    const marker = uniqueName('idem');
    ctx.model.script(marker, () => ({ text: 'done once' }));
    const body = { prompt: `Do it once ${marker}`, title: 'Once', metadata: { attempt: 'any' } };
    const key = uniqueName('idem-key');

    const first = await create(owner.key, body, key);
    expect(first.status).toBe(201);
    const runId = (first.body as { run_id: string }).run_id;
    const second = await create(owner.key, body, key);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.location).toBe(`/api/v1/agent/runs/${runId}`);
    // A replay says it is one: its body is the first answer, not the run's state now.
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await runsOfTeam(owner)).toEqual([runId]);

    // After the run has ended, a retry still replays the first response and starts nothing.
    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
    const late = await create(owner.key, body, key);
    expect(late.status).toBe(201);
    expect(late.body).toEqual({ run_id: runId, task_id: runId, state: 'QUEUED' });
    expect(late.headers['idempotent-replayed']).toBe('true');
    // The older path is the same endpoint: the same key replays there too.
    const viaAlias = await create(owner.key, body, key, '/api/v1/agent/run');
    expect(viaAlias.status).toBe(201);
    expect((viaAlias.body as { run_id: string }).run_id).toBe(runId);

    expect(await runsOfTeam(owner)).toEqual([runId]);
    expect(ctx.model.calls(marker)).toHaveLength(1);
    expect((await getRun(ctx, owner.key, runId)).state).toBe('SUCCEEDED');
  });

  test('the same body with its members in another order is the same request', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('idem-key');
    const prompt = `Order ${uniqueName('order')}`;
    const first = await create(owner.key, { prompt, title: 'T', metadata: { a: '1', b: '2' } }, key);
    expect(first.status).toBe(201);
    const second = await create(owner.key, { metadata: { b: '2', a: '1' }, title: 'T', prompt }, key);
    expect({ status: second.status, body: second.body as unknown }).toEqual({ status: 201, body: first.body });
    expect(await runsOfTeam(owner)).toHaveLength(1);
  });

  test('the same key with another body is 409 conflict and creates nothing; the first body still replays', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('idem-key');
    const prompt = `Original ${uniqueName('orig')}`;
    const first = await create(owner.key, { prompt }, key);
    expect(first.status).toBe(201);

    for (const other of [
      { prompt: `${prompt} changed` },
      { prompt, title: 'now with a title' },
      { prompt, config: { name: 'x' } },
    ]) {
      const res = await create(owner.key, other, key);
      expectConflict(res);
      expect(res.headers['x-should-retry']).toBe('false');
      expect((res.body as { detail: string }).detail).toMatch(/Idempotency-Key/);
    }
    const conflictOnAlias = await create(owner.key, { prompt: 'else' }, key, '/api/v1/agent/run');
    expectConflict(conflictOnAlias);
    expect(await runsOfTeam(owner)).toEqual([(first.body as { run_id: string }).run_id]);

    const replay = await create(owner.key, { prompt }, key);
    expect({ status: replay.status, body: replay.body as unknown }).toEqual({ status: 201, body: first.body });
  });

  test('the same key from another principal, of the same team or another, is independent', async () => {
    const owner = await ctx.newTeamKey();
    const teammate = await ctx.newTeamKey('agent', owner.team);
    const outsider = await ctx.newTeamKey();
    const key = uniqueName('shared-key');
    const body = { prompt: `Shared key ${uniqueName('shared')}` };

    const mine = await create(owner.key, body, key);
    const theirs = await create(teammate.key, body, key);
    const outside = await create(outsider.key, body, key);
    expect([mine.status, theirs.status, outside.status]).toEqual([201, 201, 201]);
    const ids = [mine, theirs, outside].map((r) => (r.body as { run_id: string }).run_id);
    expect(new Set(ids).size).toBe(3);
    expect(await runsOfTeam(owner)).toEqual([ids[0], ids[1]].sort());
    expect(await runsOfTeam(outsider)).toEqual([ids[2]]);
    expect((await getRun(ctx, teammate.key, ids[1]!)).creator).toMatchObject({ uid: teammate.uid });

    // Another body from the teammate under the same key is not a conflict with the owner's.
    const otherBody = await create(teammate.key, { prompt: 'a different prompt' }, uniqueName('k'));
    expect(otherBody.status).toBe(201);
  });

  test('concurrent requests with the same key and body create one run, and all get its id', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('race-key');
    const body = { prompt: `Race ${uniqueName('race')}`, config: { name: 'race' } };
    const responses = await Promise.all(Array.from({ length: 6 }, () => create(owner.key, body, key)));
    expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201]);
    const ids = new Set(responses.map((r) => (r.body as { run_id: string }).run_id));
    expect(ids.size).toBe(1);
    expect(await runsOfTeam(owner)).toEqual([...ids]);
  });

  test('concurrent requests with the same key and different bodies: one run, the others 409', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('race-key');
    const tag = uniqueName('race-diff');
    const responses = await Promise.all(
      Array.from({ length: 5 }, (_, i) => create(owner.key, { prompt: `Body ${i} ${tag}` }, key)),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409]);
    for (const res of responses.filter((r) => r.status === 409)) expectConflict(res);
    const winner = responses.find((r) => r.status === 201)!;
    expect(await runsOfTeam(owner)).toEqual([(winner.body as { run_id: string }).run_id]);
  });

  test('a rejected request does not use up its key', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('rejected-key');
    // Rejected by the schema, and rejected inside the transaction (no such conversation).
    expect((await create(owner.key, { prompt: '' }, key)).status).toBe(400);
    expect((await create(owner.key, { prompt: 'x', conversation_id: 'no-such-conversation' }, key)).status).toBe(400);
    expect(await runsOfTeam(owner)).toEqual([]);
    const ok = await create(owner.key, { prompt: `Fixed ${uniqueName('fixed')}` }, key);
    expect(ok.status).toBe(201);
    expect(await runsOfTeam(owner)).toHaveLength(1);
  });

  test('a key is remembered for 24 hours, not longer', async () => {
    const owner = await ctx.newTeamKey();
    const key = uniqueName('ttl-key');
    const body = { prompt: `TTL ${uniqueName('ttl')}` };
    const first = await create(owner.key, body, key);
    expect(first.status).toBe(201);
    await ctx.dataSource.query(
      `UPDATE idempotency_records SET created_at = now() - interval '23 hours' WHERE principal_uid = $1 AND key = $2`,
      [owner.uid, key],
    );
    expect((await create(owner.key, body, key)).body).toEqual(first.body);
    await ctx.dataSource.query(
      `UPDATE idempotency_records SET created_at = now() - interval '25 hours' WHERE principal_uid = $1 AND key = $2`,
      [owner.uid, key],
    );
    const later = await create(owner.key, body, key);
    expect(later.status).toBe(201);
    expect((later.body as { run_id: string }).run_id).not.toBe((first.body as { run_id: string }).run_id);
    expect(await runsOfTeam(owner)).toHaveLength(2);
  });

  const badKeys: [string, string, RegExp][] = [
    ['over 255 characters', 'k'.repeat(256), /Idempotency-Key/],
    ['with a tab', 'abc\tdef', /Idempotency-Key/],
    ['with a non-ASCII character', 'clé-1', /Idempotency-Key/],
  ];

  test.each(badKeys)('a key %s is 400 and creates nothing', async (_name, badKey, detail) => {
    const owner = await ctx.newTeamKey();
    const res = await create(owner.key, { prompt: 'x' }, badKey);
    expect({ status: res.status, error_code: (res.body as { error_code: string }).error_code }).toEqual({
      status: 400,
      error_code: 'invalid_request',
    });
    expect((res.body as { detail: string }).detail).toMatch(detail);
    expect(await runsOfTeam(owner)).toEqual([]);
    const [{ n }] = (await ctx.dataSource.query(
      `SELECT count(*)::int AS n FROM idempotency_records WHERE principal_uid = $1`,
      [owner.uid],
    )) as [{ n: number }];
    expect(n).toBe(0);
  });

  test('a key of exactly 255 printable characters (spaces and symbols included) is accepted', async () => {
    const owner = await ctx.newTeamKey();
    const key = `a b~!@#$%^&*()_+{}|:"<>?[];',./\`${'z'.repeat(255 - 32)}`;
    expect(key).toHaveLength(255);
    const first = await create(owner.key, { prompt: 'long key' }, key);
    expect(first.status).toBe(201);
    const again = await create(owner.key, { prompt: 'long key' }, key);
    expect(again.body).toEqual(first.body);
    expect(await runsOfTeam(owner)).toHaveLength(1);
  });
});

describe('Idempotency-Key on follow-ups', () => {
  test('the same key twice records one follow-up, delivered once', async () => {
    const owner = await ctx.newTeamKey();
    const marker = uniqueName('idem-followup');
    ctx.model.script(marker, (_req, call) => ({ text: `reply ${call}` }));
    const runId = await createRun(ctx, owner.key, { prompt: `Start ${marker}` });
    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);

    const key = uniqueName('followup-key');
    const first = await followup(owner.key, runId, { message: 'Now add tests', mode: 'normal' }, key);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      run_id: runId,
      state: 'QUEUED',
      followup_id: expect.any(String),
      outcome: 'handoff_execution',
    });
    const second = await followup(owner.key, runId, { message: 'Now add tests', mode: 'normal' }, key);
    expect({ status: second.status, body: second.body as unknown }).toEqual({ status: 200, body: first.body });
    expect([first.headers['idempotent-replayed'], second.headers['idempotent-replayed']]).toEqual([undefined, 'true']);
    expect(await followupsOf(runId)).toEqual([{ message: 'Now add tests', mode: 'normal' }]);

    const other = await followup(owner.key, runId, { message: 'Something else' }, key);
    expectConflict(other);
    expect(await followupsOf(runId)).toHaveLength(1);

    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
    // Still replayed after the run has ended again: it does not reopen the run.
    const late = await followup(owner.key, runId, { message: 'Now add tests', mode: 'normal' }, key);
    expect({ status: late.status, body: late.body as unknown }).toEqual({ status: 200, body: first.body });
    const run = await getRun(ctx, owner.key, runId);
    expect(run.state).toBe('SUCCEEDED');
    expect(await followupsOf(runId)).toHaveLength(1);
    // The prompt's turn and the follow-up's turn: two model calls, not three.
    expect(ctx.model.calls(marker)).toHaveLength(2);
  });

  test('concurrent follow-ups with the same key record one follow-up', async () => {
    const owner = await ctx.newTeamKey();
    const marker = uniqueName('race-followup');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const runId = await createRun(ctx, owner.key, { prompt: `Start ${marker}` });
    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
    const key = uniqueName('race-followup-key');
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => followup(owner.key, runId, { message: 'Once only' }, key)),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    for (const res of responses) expect(res.body).toEqual(responses[0]!.body);
    expect(responses[0]!.body).toEqual({
      run_id: runId,
      state: 'QUEUED',
      followup_id: expect.any(String),
      outcome: 'handoff_execution',
    });
    expect(await followupsOf(runId)).toEqual([{ message: 'Once only', mode: 'normal' }]);
    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
    expect(ctx.model.calls(marker)).toHaveLength(2);
  });

  test('a key is scoped to its run and endpoint: the same key elsewhere is a new request', async () => {
    const owner = await ctx.newTeamKey();
    const marker = uniqueName('scoped');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const key = uniqueName('scoped-key');
    // The create request and both follow-ups use one key.
    const created = await create(owner.key, { prompt: `One ${marker}` }, key);
    expect(created.status).toBe(201);
    const runA = (created.body as { run_id: string }).run_id;
    const runB = await createRun(ctx, owner.key, { prompt: `Two ${marker}` });
    await waitForState(ctx, owner.key, runA, ['SUCCEEDED']);
    await waitForState(ctx, owner.key, runB, ['SUCCEEDED']);

    expect((await followup(owner.key, runA, { message: 'same words' }, key)).status).toBe(200);
    expect((await followup(owner.key, runB, { message: 'same words' }, key)).status).toBe(200);
    expect(await followupsOf(runA)).toHaveLength(1);
    expect(await followupsOf(runB)).toHaveLength(1);
  });

  test('a bad key on a follow-up is 400 and records nothing', async () => {
    const owner = await ctx.newTeamKey();
    const runId = await createRun(ctx, owner.key, { prompt: `Bad key ${uniqueName('badkey')}` });
    const res = await followup(owner.key, runId, { message: 'hi' }, 'x'.repeat(256));
    expect({ status: res.status, error_code: (res.body as { error_code: string }).error_code }).toEqual({
      status: 400,
      error_code: 'invalid_request',
    });
    expect(await followupsOf(runId)).toEqual([]);
    await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
  });
});
