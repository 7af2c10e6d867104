import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { recordKeysLastUsed, revokeApiKey } from '../db/api-keys';
import { createApiKeyService } from '../services/keys/api-key-service';
import { auth, createRun, waitForState } from './helpers/runs';
import { keysCli as keysCliOf, lastLine } from './helpers/operator-commands';
import { parsePrometheusText, sampleValue } from './helpers/prometheus-text';
import { gate } from './helpers/scripted-model';
import { openStream } from './helpers/sse-client';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * API keys' lifecycle (wire contract, "Data lifecycle, audit and keys"): keys that expire, their
 * last use, and rotation with a grace period, through `npm run keys` and the API.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const keysCli = (...args: string[]) => keysCliOf(ctx, ...args);
const keys = () => createApiKeyService(ctx);

interface Problem {
  error_code: string;
  detail: string;
}

/** Resolves once this machine's clock (the API's and the database's too) is past `at`. */
async function clockPast(at: Date): Promise<void> {
  await waitFor(
    async () => Date.now(),
    (now) => now > at.getTime(),
    `the clock to pass ${at.toISOString()}`,
  );
}

function expectRefused(res: Response, detail: string | RegExp): void {
  expect({
    status: res.status,
    challenge: res.headers['www-authenticate'],
    error_code: (res.body as Problem).error_code,
    detail: (res.body as Problem).detail,
  }).toEqual({
    status: 401,
    challenge: 'Bearer',
    error_code: 'authentication_required',
    detail: typeof detail === 'string' ? detail : expect.stringMatching(detail),
  });
}

const listRuns = (key: string) => ctx.api.get('/api/v1/agent/runs').set(auth(key));

/** The line of `keys list` for a key id, as fields (`expires_at=…` and the rest). */
async function listed(id: string): Promise<{ line: string; field: (name: string) => string | undefined }> {
  const list = await keysCli('list');
  expect(list.code).toBe(0);
  const line = list.stdout.split('\n').find((l) => l.startsWith(`${id} `));
  if (!line) throw new Error(`keys list has no ${id}:\n${list.stdout}`);
  return { line, field: (name) => new RegExp(`\\s${name}=(\\S+)`).exec(line)?.[1] };
}

const printedAt = (stdout: string, pattern: RegExp) => new Date(pattern.exec(stdout)![1]!);
const createdId = (stdout: string) => /key ([0-9a-f-]{36}) \(prefix/.exec(stdout)![1]!;

describe('keys that expire', () => {
  test('a key works until its expires_at, then is 401 saying it expired and when, everywhere', async () => {
    const team = uniqueName('expiring');
    const created = await keys().create({ kind: 'personal', name: uniqueName('user'), team, expiresInSeconds: 5 });
    expect(created.expiresAt).toBeInstanceOf(Date);
    expect((await listRuns(created.rawKey)).status).toBe(200);

    await clockPast(created.expiresAt!);
    const expired = `The API key expired at ${created.expiresAt!.toISOString()}. Ask an operator for a new one (npm run keys -- create or rotate).`;
    const prompt = `never created ${uniqueName('expired')}`;
    const runId = '01a20148-bbe3-7f9b-a00a-640e2b639bda';
    for (const res of [
      await listRuns(created.rawKey),
      await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth(created.rawKey)),
      await ctx.api.post('/api/v1/agent/runs').set(auth(created.rawKey)).send({ prompt }),
      await ctx.api.get(`/api/v1/agent/runs/${runId}/events`).set(auth(created.rawKey)),
      await ctx.api.get('/api/v1/agent/environments').set(auth(created.rawKey)),
    ]) {
      expectRefused(res, expired);
    }
    expect(await ctx.dataSource.query(`SELECT 1 FROM runs WHERE prompt = $1`, [prompt])).toEqual([]);

    // Unknown and revoked keys are told nothing of expiry, an expired and revoked key included.
    const unknown = `ark_${randomBytes(6).toString('base64url')}_${randomBytes(32).toString('base64url')}`;
    expectRefused(await listRuns(unknown), 'The API key is unknown or has been revoked.');
    expect(await revokeApiKey(ctx.dataSource, created.id)).not.toBeNull();
    expectRefused(await listRuns(created.rawKey), 'The API key is unknown or has been revoked.');
  });

  test('create --expires-in 2s: printed and listed 2 s after its creation, and refused from then on', async () => {
    const team = uniqueName('cli-expiring');
    const out = await keysCli(
      'create',
      '--kind',
      'agent',
      '--name',
      uniqueName('bot'),
      '--team',
      team,
      '--expires-in',
      '2s',
    );
    expect(out.code).toBe(0);
    const rawKey = lastLine(out.stdout);
    const expiresAt = printedAt(out.stdout, /it expires at (\S+)\./);
    const { field } = await listed(createdId(out.stdout));
    expect(field('expires_at')).toBe(expiresAt.toISOString());
    expect(expiresAt.getTime() - new Date(field('created')!).getTime()).toBe(2000);
    expect(field('last_used_at')).toBe('never');

    await clockPast(expiresAt);
    expectRefused(await listRuns(rawKey), new RegExp(`^The API key expired at ${expiresAt.toISOString()}\\.`));
    expect((await listed(createdId(out.stdout))).line).toMatch(/\sEXPIRED$/);
  });

  test('an event stream ends when its key expires, and reconnecting is 401 saying it expired', async () => {
    const owner = await ctx.newTeamKey();
    const hold = gate<{ text: string }>();
    const marker = uniqueName('stream-expiry');
    ctx.model.script(marker, () => ({ hold: hold.promise }));
    const runId = await createRun(ctx, owner.key, { prompt: `Keep going ${marker}` });
    try {
      await waitForState(ctx, owner.key, runId, ['INPROGRESS']);
      const reader = await keys().create({ kind: 'personal', name: 'reader', team: owner.team, expiresInSeconds: 5 });
      const url = `${ctx.baseUrl}/api/v1/agent/runs/${runId}/events`;
      const stream = await openStream(url, auth(reader.rawKey));
      expect(stream.status).toBe(200);
      await stream.waitForEvent((e) => e.event === 'prompt');
      await stream.waitForClose();
      // The run goes on; the stream ended because the key did.
      expect(Date.now()).toBeGreaterThanOrEqual(reader.expiresAt!.getTime());
      expect(stream.events.map((e) => e.event)).not.toContain('end');
      expectRefused(await ctx.api.get(`/api/v1/agent/runs/${runId}/events`).set(auth(reader.rawKey)), /expired at/);
      const ownerStream = await openStream(url, auth(owner.key));
      expect(ownerStream.status).toBe(200);
      ownerStream.close();
    } finally {
      hold.release({ text: 'done' });
      await waitForState(ctx, owner.key, runId, ['SUCCEEDED']);
    }
  });
});

describe('last use', () => {
  test('keys list shows last_used_at once an API has written it (on shutdown at the latest)', async () => {
    const out = await keysCli('create', '--kind', 'personal', '--name', 'Lu', '--team', uniqueName('last-used'));
    expect(out.code).toBe(0);
    const id = createdId(out.stdout);
    expect((await listed(id)).field('last_used_at')).toBe('never');

    // An API of its own, so that its last batch is written when it shuts down.
    const api = await createTestContext({ worker: false });
    const before = new Date();
    try {
      expect((await api.api.get('/api/v1/agent/runs').set(auth(lastLine(out.stdout)))).status).toBe(200);
    } finally {
      await api.close();
    }
    const lastUsed = new Date((await listed(id)).field('last_used_at')!);
    expect(lastUsed.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(lastUsed.getTime()).toBeLessThanOrEqual(Date.now());
  });

  test("a key's row takes a newer use only a minute or more after the one it holds, whichever API sends it", async () => {
    const { id } = await ctx.newTeamKey();
    const lastUsed = async () =>
      (
        (await ctx.dataSource.query(`SELECT last_used_at FROM api_keys WHERE id = $1`, [id])) as [
          { last_used_at: Date },
        ]
      )[0].last_used_at;
    const t = new Date('2030-01-01T00:00:00.000Z');
    const at = (ms: number) => [{ keyId: id, usedAt: new Date(t.getTime() + ms) }];
    await recordKeysLastUsed(ctx.dataSource, at(0), 60_000);
    await recordKeysLastUsed(ctx.dataSource, at(59_999), 60_000);
    expect(await lastUsed()).toEqual(t);
    await recordKeysLastUsed(ctx.dataSource, at(60_000), 60_000);
    expect(await lastUsed()).toEqual(new Date(t.getTime() + 60_000));
    // An older use (another API's, late) never moves it back.
    await recordKeysLastUsed(ctx.dataSource, at(-120_000), 60_000);
    expect(await lastUsed()).toEqual(new Date(t.getTime() + 60_000));
  });
});

describe('rotation', () => {
  test('rotate prints a working key of the same holder, team, kind and role; the old one works for the grace (default 24h)', async () => {
    const team = uniqueName('rotating');
    const made = await keysCli(
      'create',
      '--kind',
      'agent',
      '--name',
      'rot-bot',
      '--team',
      team,
      '--role',
      'admin',
      '--expires-in',
      '90d',
    );
    expect(made.code).toBe(0);
    const oldId = createdId(made.stdout);
    const oldKey = lastLine(made.stdout);

    const rotated = await keysCli('rotate', oldId);
    expect(rotated.code).toBe(0);
    const newKey = lastLine(rotated.stdout);
    expect(newKey).not.toBe(oldKey);
    const newId = /to admin key ([0-9a-f-]{36}) /.exec(rotated.stdout)![1]!;
    const graceEnd = printedAt(rotated.stdout, /keeps working until (\S+), then is refused/);
    expect(graceEnd.getTime() - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(graceEnd.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600_000);

    const [oldLine, newLine] = [await listed(oldId), await listed(newId)];
    for (const name of ['team', 'name', 'creator']) expect(newLine.field(name)).toBe(oldLine.field(name));
    expect(newLine.line).toMatch(/\sagent\s+admin\s/);
    expect(oldLine.field('replaced_by')).toBe(newId);
    expect(oldLine.field('expires_at')).toBe(graceEnd.toISOString());
    // The new key lasts as long as the old one was made to: 90 days.
    expect(new Date(newLine.field('expires_at')!).getTime() - new Date(newLine.field('created')!).getTime()).toBe(
      90 * 86_400_000,
    );

    // Both work, as the same agent of the same team, with the admin's powers.
    for (const [i, key] of [oldKey, newKey].entries()) {
      const hook = { url: `https://93.184.216.34/agent-runs/${i}` };
      expect((await ctx.api.post('/api/v1/agent/webhooks').set(auth(key)).send(hook)).status).toBe(201);
    }
    const seen = await Promise.all(
      [oldKey, newKey].map(async (key) => (await ctx.api.get('/api/v1/agent/webhooks').set(auth(key))).body as unknown),
    );
    expect(seen[1]).toEqual(seen[0]);

    // A key rotates once: rotating the old one again is refused and changes nothing.
    const again = await keysCli('rotate', oldId, '--grace', '0');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`Key ${oldId} was already rotated; rotate the key that replaced it, ${newId}.`);
    expect((await listRuns(oldKey)).status).toBe(200);
  });

  test('after the grace the old key is refused as rotated; the new one works', async () => {
    const owner = await ctx.newTeamKey();
    const { created, old } = await keys().rotate(owner.id, { graceSeconds: 5 });
    expect((await listRuns(owner.key)).status).toBe(200);
    expect((await listRuns(created.rawKey)).status).toBe(200);
    await clockPast(old.expiresAt!);
    expectRefused(
      await listRuns(owner.key),
      `The API key expired at ${old.expiresAt!.toISOString()}: it was rotated and its grace period has ended. Use the key that replaced it.`,
    );
    expect((await listRuns(created.rawKey)).status).toBe(200);
  });

  test('--grace 0 revokes the old key at once; a grace never makes a key last longer', async () => {
    const made = await keysCli(
      'create',
      '--kind',
      'personal',
      '--name',
      'Ro',
      '--team',
      uniqueName('rot0'),
      '--expires-in',
      '1h',
    );
    const oldKey = lastLine(made.stdout);
    const prefix = /\(prefix (\S+)\)/.exec(made.stdout)![1]!;
    const rotated = await keysCli('rotate', prefix, '--grace', '0', '--expires-in', '2h');
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain('The old key is revoked.');
    expectRefused(await listRuns(oldKey), 'The API key is unknown or has been revoked.');
    expect((await listRuns(lastLine(rotated.stdout))).status).toBe(200);
    const oldLine = await listed(createdId(made.stdout));
    expect(oldLine.line).toMatch(/\sREVOKED \S+\s+replaced_by=/);

    // A grace past the key's own expiry leaves the expiry where it was.
    const short = await ctx.newTeamKey();
    const shortKey = await keys().create({ kind: 'personal', name: 'Sh', team: short.team, expiresInSeconds: 600 });
    const { old } = await keys().rotate(shortKey.id, { graceSeconds: 86_400 });
    expect(old.expiresAt).toEqual(shortKey.expiresAt);
  });
});

describe('bad input', () => {
  // Every refused command line is in test/unit/keys-command.test.ts; these show, through the
  // process, that a refusal exits 2 and changes nothing, before and after the database is read.
  test('a bad duration on create exits 2 saying what to write, and makes no key', async () => {
    const cases: [string, string][] = [
      ['1.5h', '--expires-in must be a whole number and a unit, s, m, h or d (e.g. 90d, 12h, 30m, 2s); got "1.5h".'],
      ['0', '--expires-in must be longer than 0'],
    ];
    const teams = cases.map(() => uniqueName('bad-duration'));
    const results = await Promise.all(
      cases.map(([value], i) =>
        keysCli('create', '--kind', 'personal', '--name', 'Bd', '--team', teams[i]!, '--expires-in', value),
      ),
    );
    for (const [i, out] of results.entries()) {
      expect({ code: out.code, says: out.stderr.includes(cases[i]![1]), usage: out.stderr.includes('Usage:') }).toEqual(
        { code: 2, says: true, usage: true },
      );
      expect(out.stdout).not.toMatch(/ark_/);
    }
    expect(await ctx.dataSource.query(`SELECT 1 FROM teams WHERE name = ANY($1)`, [teams])).toEqual([]);
  });

  test('a bad rotation exits 2 saying why, and every key is as it was', async () => {
    const { key, id, uid } = await ctx.newTeamKey();
    const revoked = await ctx.newTeamKey();
    await revokeApiKey(ctx.dataSource, revoked.id);
    // Every key of both holders: a refused rotation makes none and changes none.
    const snapshot = () =>
      ctx.dataSource.query(`SELECT * FROM api_keys WHERE principal_uid IN ($1, $2) ORDER BY id`, [uid, revoked.uid]);
    const before = await snapshot();
    expect(before).toHaveLength(2);
    const cases: [string[], string][] = [
      [['rotate', id, '--grace', '1.5h'], '--grace must be a whole number and a unit'],
      [['rotate', 'ark_nothing'], 'No key with id or prefix ark_nothing.'],
      [['rotate', revoked.id, '--grace', '0'], `Key ${revoked.id} was revoked at`],
    ];
    const results = await Promise.all(cases.map(([args]) => keysCli(...args)));
    expect(results.map((r, i) => ({ code: r.code, says: r.stderr.includes(cases[i]![1]), out: r.stdout }))).toEqual(
      cases.map(() => ({ code: 2, says: true, out: '' })),
    );
    expect(await snapshot()).toEqual(before);
    expect((await listRuns(key)).status).toBe(200);
  });
});

describe('the metric', () => {
  test('agent_runs_api_keys_expiring_soon counts active keys expiring within 7 days, not revoked or rotated ones', async () => {
    const scrape = async () => {
      const res = await ctx.api.get('/metrics');
      expect(res.status).toBe(200);
      return sampleValue(parsePrometheusText(res.text), 'agent_runs_api_keys_expiring_soon');
    };
    const expiring = async () =>
      (
        (await ctx.dataSource.query(
          `SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL AND replaced_by IS NULL
            AND expires_at > now() AND expires_at <= now() + interval '7 days'`,
        )) as [{ n: number }]
      )[0].n;
    const before = await expiring();
    const team = uniqueName('metric');
    const make = (days: number) =>
      keys().create({ kind: 'personal', name: uniqueName('user'), team, expiresInSeconds: days * 86_400 });
    await make(3);
    await make(30);
    await revokeApiKey(ctx.dataSource, (await make(3)).id);
    // The rotated key no longer counts; its replacement, made to last 3 days too, does.
    await keys().rotate((await make(3)).id, { graceSeconds: 3600 });
    expect(await expiring()).toBe(before + 2);
    // The API reads it at most every 10 s.
    await waitFor(scrape, (value) => value === before + 2, 'the gauge to count the two keys');
  });
});
