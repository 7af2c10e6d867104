import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { revokeApiKey } from '../db/api-keys';
import { gate } from './helpers/scripted-model';
import { auth, createRun, getRun, waitForState, type RunBody } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { keysCli as keysCliOf, lastLine, type CliResult } from './helpers/operator-commands';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

interface Problem {
  error_code: string;
  status: number;
  detail: string;
  title: string;
  instance: string;
}

function expectUnauthenticated(res: Response): void {
  expect({
    status: res.status,
    challenge: res.headers['www-authenticate'],
    contentType: res.headers['content-type'],
    error_code: (res.body as Problem).error_code,
    bodyStatus: (res.body as Problem).status,
  }).toEqual({
    status: 401,
    challenge: 'Bearer',
    contentType: expect.stringMatching(/^application\/problem\+json/),
    error_code: 'authentication_required',
    bodyStatus: 401,
  });
}

function expectNotFound(res: Response): Problem {
  const body = res.body as Problem;
  expect({ status: res.status, error_code: body.error_code }).toEqual({
    status: 404,
    error_code: 'resource_not_found',
  });
  return body;
}

async function runsWithPrompt(prompt: string): Promise<number> {
  const [{ n }] = (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM runs WHERE prompt = $1`, [prompt])) as [
    {
      n: number;
    },
  ];
  return n;
}

async function followupCount(runId: string): Promise<number> {
  const [{ n }] = (await ctx.dataSource.query(`SELECT count(*)::int AS n FROM followups WHERE run_id = $1`, [
    runId,
  ])) as [{ n: number }];
  return n;
}

async function listIds(key: string, query = 'limit=100'): Promise<string[]> {
  const res = await ctx.api.get(`/api/v1/agent/runs?${query}`).set(auth(key));
  expect(res.status).toBe(200);
  return (res.body as { runs: RunBody[] }).runs.map((r) => r.run_id);
}

/** Every endpoint, called with the given Authorization header (or none); all must be 401 and change nothing. */
async function expectEveryEndpointRefuses(authorization: string | undefined, runId: string): Promise<void> {
  const withAuth = <T extends { set(name: string, value: string): T }>(req: T): T =>
    authorization === undefined ? req : req.set('Authorization', authorization);
  const prompt = `never created ${uniqueName('unauth')}`;
  const followupsBefore = await followupCount(runId);
  const before = (await ctx.dataSource.query(`SELECT state, cancel_requested_at FROM runs WHERE run_id = $1`, [
    runId,
  ])) as unknown[];

  const responses = [
    await withAuth(ctx.api.get('/api/v1/agent/runs')),
    await withAuth(ctx.api.get(`/api/v1/agent/runs/${runId}`)),
    await withAuth(ctx.api.post('/api/v1/agent/runs')).send({ prompt }),
    await withAuth(ctx.api.post('/api/v1/agent/run')).send({ prompt }),
    await withAuth(ctx.api.post(`/api/v1/agent/runs/${runId}/followups`)).send({ message: 'hi' }),
    await withAuth(ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`)),
  ];
  for (const res of responses) expectUnauthenticated(res);
  expect(await runsWithPrompt(prompt)).toBe(0);
  expect(await followupCount(runId)).toBe(followupsBefore);
  expect(await ctx.dataSource.query(`SELECT state, cancel_requested_at FROM runs WHERE run_id = $1`, [runId])).toEqual(
    before,
  );
}

describe('authentication', () => {
  let owner: { key: string };
  let heldRunId: string;
  const hold = gate<{ text: string }>();

  beforeAll(async () => {
    owner = await ctx.newTeamKey();
    const marker = uniqueName('auth-held');
    ctx.model.script(marker, () => ({ hold: hold.promise }));
    heldRunId = await createRun(ctx, owner.key, { prompt: `Keep going ${marker}` });
    await waitForState(ctx, owner.key, heldRunId, ['INPROGRESS']);
  });
  afterAll(async () => {
    hold.release({ text: 'done' });
    if (heldRunId) await waitForState(ctx, owner.key, heldRunId, ['SUCCEEDED']);
  });

  const wellFormedUnknown = `ark_${randomBytes(6).toString('base64url')}_${randomBytes(32).toString('base64url')}`;
  const headers: [string, string | undefined][] = [
    ['no Authorization header', undefined],
    ['an empty Authorization header', ''],
    ['a Basic header', 'Basic x'],
    ['Basic credentials of a valid shape', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['`Bearer` alone', 'Bearer'],
    ['`Bearer` and spaces', 'Bearer    '],
    ['a Bearer header with two tokens', 'Bearer abc def'],
    ['an unknown key of a random shape', 'Bearer not-a-key'],
    ['an unknown key of the right shape', `Bearer ${wellFormedUnknown}`],
  ];

  test.each(headers)('%s is 401 authentication_required with WWW-Authenticate: Bearer', async (_name, header) => {
    await expectEveryEndpointRefuses(header, heldRunId);
  });

  test('the key itself without the Bearer scheme is 401', async () => {
    await expectEveryEndpointRefuses(owner.key, heldRunId);
  });

  test('a valid key with another character appended or removed is 401', async () => {
    await expectEveryEndpointRefuses(`Bearer ${owner.key}x`, heldRunId);
    await expectEveryEndpointRefuses(`Bearer ${owner.key.slice(0, -1)}`, heldRunId);
  });

  test('the Bearer scheme is case-insensitive (RFC 9110)', async () => {
    const res = await ctx.api.get(`/api/v1/agent/runs/${heldRunId}`).set('Authorization', `bearer ${owner.key}`);
    expect(res.status).toBe(200);
  });

  test('a revoked key is 401 on every endpoint, and other keys of the team keep working', async () => {
    const team = uniqueName('team');
    const doomed = await ctx.newTeamKey('personal', team);
    const colleague = await ctx.newTeamKey('personal', team);
    const marker = uniqueName('revoked');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const runId = await createRun(ctx, doomed.key, { prompt: `Before revocation ${marker}` });
    await waitForState(ctx, doomed.key, runId, ['SUCCEEDED']);

    expect(await revokeApiKey(ctx.dataSource, doomed.id)).not.toBeNull();
    await expectEveryEndpointRefuses(`Bearer ${doomed.key}`, runId);
    expect((await getRun(ctx, colleague.key, runId)).run_id).toBe(runId);
    // Revoking twice finds no active key.
    expect(await revokeApiKey(ctx.dataSource, doomed.id)).toBeNull();
  });

  test('a key can be revoked by its public prefix', async () => {
    const { key, id } = await ctx.newTeamKey();
    expect((await ctx.api.get('/api/v1/agent/runs').set(auth(key))).status).toBe(200);
    const [{ prefix }] = (await ctx.dataSource.query(`SELECT prefix FROM api_keys WHERE id = $1`, [id])) as [
      {
        prefix: string;
      },
    ];
    expect(key.startsWith(prefix)).toBe(true);
    expect(await revokeApiKey(ctx.dataSource, prefix)).not.toBeNull();
    expectUnauthenticated(await ctx.api.get('/api/v1/agent/runs').set(auth(key)));
  });
});

describe('team isolation', () => {
  test('another team’s run is 404 on GET, follow-ups and cancel, changes nothing, and is never listed', async () => {
    const owner = await ctx.newTeamKey();
    const stranger = await ctx.newTeamKey();
    const heldMarker = uniqueName('isolated-held');
    const doneMarker = uniqueName('isolated-done');
    const hold = gate<{ text: string }>();
    ctx.model.script(heldMarker, () => ({ hold: hold.promise }));
    ctx.model.script(doneMarker, () => ({ text: 'finished' }));
    const doneRunId = await createRun(ctx, owner.key, {
      prompt: `Done ${doneMarker}`,
      config: { name: 'secret-name' },
      metadata: { project: 'secret' },
    });
    const heldRunId = await createRun(ctx, owner.key, { prompt: `Held ${heldMarker}` });
    try {
      await waitForState(ctx, owner.key, doneRunId, ['SUCCEEDED']);
      await waitForState(ctx, owner.key, heldRunId, ['INPROGRESS']);
      const missing = '01a20148-bbe3-7f9b-a00a-640e2b639bda';
      const notFoundBody = expectNotFound(await ctx.api.get(`/api/v1/agent/runs/${missing}`).set(auth(stranger.key)));

      for (const runId of [doneRunId, heldRunId]) {
        const snapshot = () =>
          ctx.dataSource.query(`SELECT state, turn, updated_at, cancel_requested_at FROM runs WHERE run_id = $1`, [
            runId,
          ]);
        const before = (await snapshot()) as unknown[];
        const get = expectNotFound(await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth(stranger.key)));
        // Indistinguishable from a run that does not exist.
        expect(get.detail).toBe(notFoundBody.detail.replace(missing, runId));
        expect(get.title).toBe(notFoundBody.title);
        expectNotFound(
          await ctx.api
            .post(`/api/v1/agent/runs/${runId}/followups`)
            .set(auth(stranger.key))
            .send({ message: 'hijack' }),
        );
        // Not 400 "already SUCCEEDED" for the ended run: that would tell the run exists.
        expectNotFound(await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(stranger.key)));
        expect(await followupCount(runId)).toBe(0);
        expect(await snapshot()).toEqual(before);
      }
      expect((await getRun(ctx, owner.key, heldRunId)).state).toBe('INPROGRESS');

      expect(await listIds(stranger.key)).toEqual([]);
      for (const query of [
        `creator=${owner.uid}`,
        `q=${doneMarker}`,
        'name=secret-name',
        'metadata[project]=secret',
        'state=SUCCEEDED&state=INPROGRESS',
      ]) {
        expect(await listIds(stranger.key, query)).toEqual([]);
      }
      expect((await listIds(owner.key)).sort()).toEqual([doneRunId, heldRunId].sort());

      // Nor can another team continue the run's conversation or name it as a parent: to it, they
      // do not exist (400, naming the field).
      const done = await getRun(ctx, owner.key, doneRunId);
      const borrowed = `borrowed ${uniqueName('x')}`;
      const conv = await ctx.api
        .post('/api/v1/agent/runs')
        .set(auth(stranger.key))
        .send({ prompt: borrowed, conversation_id: done.conversation_id });
      expect(conv.status).toBe(400);
      const parent = await ctx.api
        .post('/api/v1/agent/runs')
        .set(auth(stranger.key))
        .send({ prompt: borrowed, parent_run_id: doneRunId });
      expect(parent.status).toBe(400);
      expect(await runsWithPrompt(borrowed)).toBe(0);
    } finally {
      hold.release({ text: 'released' });
      await waitForState(ctx, owner.key, heldRunId, ['SUCCEEDED']);
    }
  });

  test('keys of the same team see and act on each other’s runs', async () => {
    const first = await ctx.newTeamKey();
    const second = await ctx.newTeamKey('agent', first.team);
    const marker = uniqueName('shared');
    ctx.model.script(marker, () => ({ text: 'shared' }));
    const runId = await createRun(ctx, first.key, { prompt: `Shared ${marker}` });
    await waitForState(ctx, second.key, runId, ['SUCCEEDED']);
    expect(await listIds(second.key)).toEqual([runId]);
  });
});

describe('principals', () => {
  test('an agent key’s runs are by a service_account, a personal key’s by a user', async () => {
    const team = uniqueName('team');
    const person = await ctx.newTeamKey('personal', team);
    const agent = await ctx.newTeamKey('agent', team);
    const marker = uniqueName('creator');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const byPerson = await createRun(ctx, person.key, { prompt: `By a person ${marker}` });
    const byAgent = await createRun(ctx, agent.key, { prompt: `By an agent ${marker}` });

    expect((await getRun(ctx, person.key, byPerson)).creator).toEqual({
      uid: person.uid,
      display_name: expect.any(String),
      type: 'user',
    });
    expect((await getRun(ctx, person.key, byAgent)).creator).toEqual({
      uid: agent.uid,
      display_name: expect.any(String),
      type: 'service_account',
    });
    expect(person.uid).not.toBe(agent.uid);
    expect(await listIds(person.key, `creator=${agent.uid}`)).toEqual([byAgent]);
    expect(await listIds(agent.key, `creator=${person.uid}`)).toEqual([byPerson]);
    await waitForState(ctx, person.key, byPerson, ['SUCCEEDED']);
    await waitForState(ctx, person.key, byAgent, ['SUCCEEDED']);
  });

  test('an agent key may name its own identity as agent_identity_uid', async () => {
    const agent = await ctx.newTeamKey('agent');
    const marker = uniqueName('self');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(agent.key))
      .send({ prompt: `As myself ${marker}`, agent_identity_uid: agent.uid });
    expect(res.status).toBe(201);
    const run = await getRun(ctx, agent.key, (res.body as { run_id: string }).run_id);
    expect(run.creator).toMatchObject({ uid: agent.uid, type: 'service_account' });
    await waitForState(ctx, agent.key, run.run_id, ['SUCCEEDED']);
  });
});

describe('the keys CLI', () => {
  const keysCli = (...args: string[]) => keysCliOf(ctx, ...args);

  test('create prints a working key last; list shows its prefix, never the key; revoke makes it 401', async () => {
    const team = uniqueName('cli-team');
    const name = uniqueName('cli-agent');
    const created = await keysCli('create', '--kind', 'agent', '--name', name, '--team', team);
    expect(created).toMatchObject({ code: 0 });
    const rawKey = lastLine(created.stdout);
    expect(rawKey).toMatch(/^\S+$/);

    const listed = await ctx.api.get('/api/v1/agent/runs').set(auth(rawKey));
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ runs: [], page_info: { has_next_page: false } });
    const marker = uniqueName('cli');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const runId = await createRun(ctx, rawKey, { prompt: `From a CLI key ${marker}` });
    const run = await getRun(ctx, rawKey, runId);
    expect(run.creator).toMatchObject({ display_name: name, type: 'service_account' });

    const [row] = (await ctx.dataSource.query(
      `SELECT k.id, k.prefix, k.kind, k.name, t.name AS team, to_jsonb(k) AS whole
         FROM api_keys k JOIN teams t ON t.id = k.team_id WHERE k.name = $1`,
      [name],
    )) as { id: string; prefix: string; kind: string; name: string; team: string; whole: unknown }[];
    expect(row).toMatchObject({ kind: 'agent', team });
    expect(rawKey.startsWith(row!.prefix)).toBe(true);
    // Stored only as a hash: no column holds the key or its secret part.
    const secret = rawKey.slice(row!.prefix.length + 1);
    expect(JSON.stringify(row!.whole)).not.toContain(secret);

    const list = await keysCli('list');
    expect(list.code).toBe(0);
    const line = list.stdout.split('\n').find((l) => l.includes(row!.id));
    expect(line).toBeDefined();
    expect(line).toContain(row!.prefix);
    expect(line).toContain(`team=${team}`);
    expect(line).not.toContain('REVOKED');
    expect(list.stdout).not.toContain(secret);

    const revoked = await keysCli('revoke', row!.id);
    expect(revoked.code).toBe(0);
    expectUnauthenticated(await ctx.api.get('/api/v1/agent/runs').set(auth(rawKey)));
    expectUnauthenticated(await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth(rawKey)));
    const relisted = await keysCli('list');
    expect(relisted.stdout.split('\n').find((l) => l.includes(row!.id))).toContain('REVOKED');

    // Revoking it again finds no active key: a failure, not a silent success.
    const again = await keysCli('revoke', row!.id);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(row!.id);
  });

  test('roles: keys are members unless created admin; list shows the role; set-role changes it and the API obeys', async () => {
    const team = uniqueName('cli-roles');
    const member = await keysCli('create', '--kind', 'personal', '--name', 'Bo', '--team', team);
    const admin = await keysCli('create', '--kind', 'personal', '--name', 'Al', '--team', team, '--role', 'admin');
    expect([member.code, admin.code]).toEqual([0, 0]);
    expect(member.stdout).toContain('Created personal member key');
    expect(admin.stdout).toContain('Created personal admin key');
    const [memberKey, adminKey] = [lastLine(member.stdout), lastLine(admin.stdout)];
    // The public prefix is base64url and may itself contain '_': take it from what create printed.
    const prefixes = new Map(
      [member, admin].map((out) => [lastLine(out.stdout), /\(prefix (\S+)\)/.exec(out.stdout)![1]!]),
    );
    const prefixOf = (key: string) => prefixes.get(key)!;
    expect(memberKey.startsWith(`${prefixOf(memberKey)}_`)).toBe(true);
    const lineOf = async (key: string) =>
      (await keysCli('list')).stdout.split('\n').find((l) => l.includes(`${prefixOf(key)} `));
    expect(await lineOf(memberKey)).toMatch(/\smember\s/);
    expect(await lineOf(adminKey)).toMatch(/\sadmin\s/);

    const hook = { url: 'https://93.184.216.34/agent-runs' };
    const subscribe = (key: string) => ctx.api.post('/api/v1/agent/webhooks').set(auth(key)).send(hook);
    expect((await subscribe(memberKey)).status).toBe(403);
    expect((await subscribe(adminKey)).status).toBe(201);
    expect((await keysCli('set-role', prefixOf(memberKey), 'admin')).code).toBe(0);
    expect(await lineOf(memberKey)).toMatch(/\sadmin\s/);
    expect((await subscribe(memberKey)).status).toBe(201);

    const bad = await keysCli('create', '--kind', 'personal', '--name', 'Cy', '--team', team, '--role', 'owner');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--role must be member or admin');
  });

  test('a personal key from the CLI attributes runs to a user', async () => {
    const created = await keysCli('create', '--kind', 'personal', '--name', 'Ada', '--team', uniqueName('cli-team'));
    expect(created.code).toBe(0);
    const rawKey = lastLine(created.stdout);
    const marker = uniqueName('cli-personal');
    ctx.model.script(marker, () => ({ text: 'ok' }));
    const runId = await createRun(ctx, rawKey, { prompt: `By Ada ${marker}` });
    expect((await getRun(ctx, rawKey, runId)).creator).toMatchObject({ display_name: 'Ada', type: 'user' });
  });

  const badInvocations: [string, string[]][] = [
    ['no command', []],
    ['an unknown command', ['frobnicate']],
    ['create without --kind', ['create', '--name', 'NAME', '--team', 'TEAM']],
    ['create with an unknown kind', ['create', '--kind', 'robot', '--name', 'NAME', '--team', 'TEAM']],
    ['create without --name', ['create', '--kind', 'agent', '--team', 'TEAM']],
    ['create with a blank --name', ['create', '--kind', 'agent', '--name', '  ', '--team', 'TEAM']],
    ['create without --team', ['create', '--kind', 'agent', '--name', 'NAME']],
    ['create with an unknown option', ['create', '--kind', 'agent', '--name', 'NAME', '--team', 'TEAM', '--bogus']],
    ['create with an option missing its value', ['create', '--kind', 'agent', '--team', 'TEAM', '--name']],
    ['revoke without an id', ['revoke']],
    ['revoke with two ids', ['revoke', 'a', 'b']],
  ];

  describe('a bad invocation', () => {
    // Each is a separate process: start them all at once, then check each.
    const results = new Map<string, { result: CliResult; name: string; team: string }>();
    beforeAll(async () => {
      await Promise.all(
        badInvocations.map(async ([label, args]) => {
          const name = uniqueName('bad-cli');
          const team = uniqueName('bad-cli-team');
          const result = await keysCli(...args.map((a) => (a === 'NAME' ? name : a === 'TEAM' ? team : a)));
          results.set(label, { result, name, team });
        }),
      );
    });

    test.each(badInvocations)('%s exits non-zero with usage and creates nothing', async (label) => {
      const { result, name, team } = results.get(label)!;
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/Usage:/);
      expect(result.stdout).not.toMatch(/ark_/);
      const [{ keys, teams }] = (await ctx.dataSource.query(
        `SELECT (SELECT count(*)::int FROM api_keys WHERE name = $1) AS keys,
                (SELECT count(*)::int FROM teams WHERE name = $2) AS teams`,
        [name, team],
      )) as [{ keys: number; teams: number }];
      expect({ keys, teams }).toEqual({ keys: 0, teams: 0 });
    });
  });
});

describe('unauthenticated traffic', () => {
  /**
   * Sends the headers of a 16 MiB body and only its first KiB, then waits for the answer: a
   * server that reads bodies before it authenticates would wait for the rest and never answer.
   */
  function partialBody(
    url: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: string; ms: number }> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(16 * 1024 * 1024), ...headers },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          resolve({ status: res.statusCode!, body, ms: Date.now() - started });
          req.destroy();
        });
      });
      req.on('error', reject);
      req.write(`{"prompt":"x","attachments":[{"file_name":"a","data":"${'A'.repeat(1000)}`);
    });
  }

  test('no body is read before the key is checked, nor on a route that takes none', async () => {
    const noKey = await partialBody(`${ctx.baseUrl}/api/v1/agent/runs`);
    expect(noKey.status).toBe(401);
    expect(JSON.parse(noKey.body)).toMatchObject({ error_code: 'authentication_required' });
    const badKey = await partialBody(`${ctx.baseUrl}/api/v1/agent/runs`, { Authorization: 'Bearer ark_x_y' });
    expect(badKey.status).toBe(401);
    const answers: [string, number][] = [];
    for (const path of ['/healthz', '/api/v1/no-such-route', '/sessions/nothing']) {
      answers.push([path, (await partialBody(`${ctx.baseUrl}${path}`)).status]);
    }
    expect(answers).toEqual([
      ['/healthz', 405],
      ['/api/v1/no-such-route', 404],
      ['/sessions/nothing', 405],
    ]);
  });

  test('requests without a valid key are limited per client address; keys and health checks are not', async () => {
    const limited = await createTestContext({ worker: false, env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '5' } });
    try {
      const { key } = await limited.newTeamKey();
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push((await limited.api.get('/api/v1/agent/runs').set('Authorization', 'Bearer nope')).status);
      }
      // The open pages count too, and so do the open routes of the API (the factory file format),
      // whatever the case of the path the router takes.
      statuses.push((await limited.api.get('/api/v1/Factory-Files/schemas')).status);
      statuses.push((await limited.api.get('/sessions/unknown-session')).status);
      const refused = await limited.api.get('/api/v1/agent/runs').set('Authorization', 'Bearer nope');
      expect(statuses).toEqual([401, 401, 401, 200, 403]);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error_code: 'rate_limited', retryable: true });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect((await limited.api.get('/sessions/unknown-session')).status).toBe(429);
      expect((await limited.api.post('/api/v1/factory-files/validate').send({ files: [] })).status).toBe(429);
      // A valid key from the same address works, and health checks are never limited.
      expect((await limited.api.get('/api/v1/agent/runs').set(auth(key))).status).toBe(200);
      expect((await limited.api.get('/healthz')).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  test('factory file validations have a limit of their own per client address, counted before the body is read', async () => {
    const limited = await createTestContext({
      worker: false,
      env: { RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE: '2' },
    });
    try {
      const validate = () => limited.api.post('/api/v1/factory-files/validate').send({ files: [] });
      expect([(await validate()).status, (await validate()).status]).toEqual([200, 200]);
      const refused = await validate();
      expect(refused.status).toBe(429);
      expect(refused.body.detail).toContain('RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE is 2');
      // A refused request's body is never parsed: a malformed one is refused the same.
      expect((await limited.api.post('/api/v1/factory-files/validate').send('{not json')).status).toBe(429);
      // The schemas are not validations.
      expect((await limited.api.get('/api/v1/factory-files/schemas')).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  test('a client cannot pick its own address with X-Forwarded-For unless a proxy is trusted', async () => {
    const limited = await createTestContext({ worker: false, env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '2' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await limited.api.get('/api/v1/agent/runs').set('X-Forwarded-For', `198.51.100.${i}`);
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await limited.close();
    }
  });
});
