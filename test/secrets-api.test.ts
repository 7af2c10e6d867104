import { randomBytes } from 'node:crypto';
import type { Response } from 'supertest';
import { MAX_SECRET_VALUE_CHARS } from '../core/schemas/managed-secret-schemas';
import { decryptSecret } from '../core/secrets';
import { runWorkflowId } from '../workflows/run-contract';
import { auth, getRun } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import type { SecretsKeyring } from '../core/secrets-keyring';

/**
 * `/agent/secrets`: a team's managed secrets, written by admin keys, never shown; and the checks
 * a run's `config.harness` and `config.harness_auth_secrets` get when it is created. No worker:
 * nothing here needs a run to be worked on.
 */
const CAP = 5;
let ctx: TestContext;
let secretsKeyring: SecretsKeyring;
/** Runs the positive cases create, terminated at the end (no worker takes them). */
const createdRuns: string[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ worker: false, env: { TEAM_MAX_SECRETS: String(CAP) } });
  secretsKeyring = ctx.config.secretsKeyring!;
});
afterAll(async () => {
  if (!ctx) return;
  for (const runId of createdRuns) {
    await ctx.client.workflow
      .getHandle(runWorkflowId(runId))
      .terminate('test over')
      .catch(() => undefined);
  }
  await ctx.close();
});

interface Team {
  admin: string;
  member: string;
  teamId: string;
}

/** A fresh team with an admin key and a member key. */
async function newTeam(): Promise<Team> {
  const admin = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const member = await ctx.newTeamKey('personal', admin.team);
  const [row] = (await ctx.dataSource.query(`SELECT team_id FROM api_keys WHERE id = $1`, [admin.id])) as {
    team_id: string;
  }[];
  return { admin: admin.key, member: member.key, teamId: row!.team_id };
}

interface SecretRow {
  name: string;
  kind: string;
  description: string | null;
  encrypted_value: string;
  /** The whole row as PostgreSQL prints it, to look for the value anywhere in it. */
  row_text: string;
}

async function secretRows(teamId: string): Promise<SecretRow[]> {
  return (await ctx.dataSource.query(
    `SELECT name, kind, description, encrypted_value, s::text AS row_text
       FROM managed_secrets s WHERE team_id = $1 ORDER BY name`,
    [teamId],
  )) as SecretRow[];
}

const anthropicKey = () => `sk-ant-api03-${randomBytes(24).toString('hex')}`;
const openaiKey = () => `sk-proj-${randomBytes(24).toString('hex')}`;
const geminiKey = () => `AIzaSy${randomBytes(16).toString('hex')}`;

const store = (key: string, body: Record<string, unknown>) =>
  ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send(body);
const list = (key: string) => ctx.api.get('/api/v1/agent/secrets').set(auth(key));
const getSecret = (key: string, name: string) => ctx.api.get(`/api/v1/agent/secrets/${name}`).set(auth(key));
const deleteSecret = (key: string, name: string) => ctx.api.delete(`/api/v1/agent/secrets/${name}`).set(auth(key));

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function expectProblem(res: Response, status: number, errorCode: string, detail: string | RegExp): void {
  expect({ status: res.status, error_code: res.body.error_code, type: res.headers['content-type'] }).toEqual({
    status,
    error_code: errorCode,
    type: expect.stringMatching(/^application\/problem\+json/),
  });
  if (typeof detail === 'string') expect(res.body.detail).toBe(detail);
  else expect(res.body.detail).toMatch(detail);
}

test('an admin key creates a secret (201, Location) and replaces it (200: updated_at moves, created_at stays); no answer carries the value, the table holds it only encrypted', async () => {
  const team = await newTeam();
  const first = anthropicKey();
  const created = await store(team.admin, { name: 'claude-main', value: first, description: 'The team key' });
  expect(created.status).toBe(201);
  expect(created.headers.location).toBe('/api/v1/agent/secrets/claude-main');
  expect(created.body).toEqual({
    name: 'claude-main',
    kind: 'anthropic_api_key',
    description: 'The team key',
    created_at: expect.stringMatching(ISO),
    updated_at: expect.stringMatching(ISO),
  });
  const item = created.body as { created_at: string; updated_at: string };

  const listed = await list(team.admin);
  expect(listed.status).toBe(200);
  expect(listed.body).toEqual({ secrets: [created.body], page_info: { has_next_page: false } });
  const fetched = await getSecret(team.admin, 'claude-main');
  expect([fetched.status, fetched.body]).toEqual([200, created.body]);
  for (const res of [created, listed, fetched]) {
    expect(res.text).not.toContain(first);
    expect(res.text).not.toContain(first.slice('sk-ant-api03-'.length));
  }

  const [row] = await secretRows(team.teamId);
  expect(row).toMatchObject({ name: 'claude-main', kind: 'anthropic_api_key', description: 'The team key' });
  expect(row!.encrypted_value).toMatch(/^enc:v2:fp-[0-9a-f]{12}:[A-Za-z0-9_-]+$/);
  expect(row!.row_text).not.toContain(first);
  expect(decryptSecret(row!.encrypted_value, secretsKeyring)).toBe(first);

  // The same name again replaces it: value, kind and description.
  const second = openaiKey();
  const replaced = await store(team.admin, { name: 'claude-main', value: second, description: 'Rotated' });
  expect(replaced.status).toBe(200);
  expect(replaced.headers.location).toBe('/api/v1/agent/secrets/claude-main');
  expect(replaced.body).toEqual({
    name: 'claude-main',
    kind: 'openai_api_key',
    description: 'Rotated',
    created_at: item.created_at,
    updated_at: expect.stringMatching(ISO),
  });
  expect(Date.parse(replaced.body.updated_at)).toBeGreaterThan(Date.parse(item.updated_at));
  const afterReplace = await getSecret(team.admin, 'claude-main');
  expect(afterReplace.body).toEqual(replaced.body);
  for (const res of [replaced, afterReplace, await list(team.admin)]) {
    expect(res.text).not.toContain(first);
    expect(res.text).not.toContain(second);
  }
  const rows = await secretRows(team.teamId);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.row_text).not.toContain(second);
  expect(decryptSecret(rows[0]!.encrypted_value, secretsKeyring)).toBe(second);
});

test("the kind is read from the value's prefix (sk-ant-, sk-ant-oat, sk-, AIza) unless given; a value without one needs `kind`", async () => {
  const team = await newTeam();
  const cases: [string, string, string | undefined, string][] = [
    ['anthropic', anthropicKey(), undefined, 'anthropic_api_key'],
    ['claude-oauth', `sk-ant-oat01-${randomBytes(16).toString('hex')}`, undefined, 'claude_oauth_token'],
    ['openai', openaiKey(), undefined, 'openai_api_key'],
    ['gemini', geminiKey(), undefined, 'gemini_api_key'],
    ['github', `ghp_${randomBytes(16).toString('hex')}`, 'other', 'other'],
  ];
  for (const [name, value, kind, expected] of cases) {
    const res = await store(team.admin, { name, value, ...(kind ? { kind } : {}) });
    expect([name, res.status, res.body.kind]).toEqual([name, 201, expected]);
  }
  // A given kind wins over the prefix (an `sk-` key of another provider).
  const overridden = await store(team.admin, {
    name: 'openai',
    value: `sk-${randomBytes(16).toString('hex')}`,
    kind: 'other',
  });
  expect([overridden.status, overridden.body.kind]).toEqual([200, 'other']);

  const unknown = await store(team.admin, { name: 'mystery', value: `tok_${randomBytes(16).toString('hex')}` });
  expectProblem(
    unknown,
    400,
    'invalid_request',
    'Field `kind`: the value does not say what it is; send `kind`, one of anthropic_api_key, claude_oauth_token, openai_api_key, gemini_api_key, registry_credentials, git_credentials, other.',
  );
  expect((await secretRows(team.teamId)).map((r) => [r.name, r.kind])).toEqual([
    ['anthropic', 'anthropic_api_key'],
    ['claude-oauth', 'claude_oauth_token'],
    ['gemini', 'gemini_api_key'],
    ['github', 'other'],
    ['openai', 'other'],
  ]);
});

test('a member key may list and read secrets, but storing, replacing or deleting one is 403 saying an admin key is needed, and changes nothing', async () => {
  const team = await newTeam();
  const value = anthropicKey();
  expect((await store(team.admin, { name: 'shared', value })).status).toBe(201);
  const before = await secretRows(team.teamId);

  const adminOnly = (what: string) =>
    `Only an admin key of your team may ${what}; this key is a member key. An operator makes one with \`npm run keys -- create --role admin\` or \`npm run keys -- set-role <prefix> admin\`.`;
  expectProblem(
    await store(team.member, { name: 'mine', value: openaiKey() }),
    403,
    'not_authorized',
    adminOnly('store secrets'),
  );
  expectProblem(
    await store(team.member, { name: 'shared', value: openaiKey() }),
    403,
    'not_authorized',
    adminOnly('store secrets'),
  );
  expectProblem(await deleteSecret(team.member, 'shared'), 403, 'not_authorized', adminOnly('delete secrets'));
  expect(await secretRows(team.teamId)).toEqual(before);

  const listed = await list(team.member);
  expect([listed.status, listed.body.secrets.map((s: { name: string }) => s.name)]).toEqual([200, ['shared']]);
  const fetched = await getSecret(team.member, 'shared');
  expect([fetched.status, fetched.body.kind]).toEqual([200, 'anthropic_api_key']);
  expect(listed.text + fetched.text).not.toContain(value);
});

test('a bad request is 400 saying what to fix, never repeats the value, and stores nothing', async () => {
  const team = await newTeam();
  const value = anthropicKey();
  const NAME_RULE = 'must be 1 to 128 letters, digits, `_`, `.` or `-`, starting with a letter or digit';
  const VALUE_RULE = 'must be printable ASCII without spaces or line breaks (a key or a token)';
  const cases: [string, Record<string, unknown>, string | RegExp][] = [
    ['a name with a space', { name: 'my key', value }, `\`name\`: ${NAME_RULE}.`],
    ['a name starting with -', { name: '-key', value }, `\`name\`: ${NAME_RULE}.`],
    ['a name of 129 characters', { name: 'k'.repeat(129), value }, `\`name\`: ${NAME_RULE}.`],
    ['a name with a slash', { name: 'team/key', value }, `\`name\`: ${NAME_RULE}.`],
    ['no name', { value }, '`name` is required.'],
    ['a value with a space', { name: 'k', value: `${value} x` }, `\`value\`: ${VALUE_RULE}.`],
    ['a value with a newline', { name: 'k', value: `${value}\n` }, `\`value\`: ${VALUE_RULE}.`],
    ['a value with a tab', { name: 'k', value: `${value}\t` }, `\`value\`: ${VALUE_RULE}.`],
    ['a value with a non-ASCII letter', { name: 'k', value: `${value}é` }, `\`value\`: ${VALUE_RULE}.`],
    ['an empty value', { name: 'k', value: '' }, /^`value`: Too small: expected string to have >=1 characters\./],
    ['no value', { name: 'k' }, '`value` is required.'],
    ['a value that is no string', { name: 'k', value: 12345678 }, /^`value`: Invalid input: expected string/],
    [
      'a value too long',
      { name: 'k', value: `sk-ant-${'a'.repeat(MAX_SECRET_VALUE_CHARS)}` },
      `\`value\`: Too big: expected string to have <=${MAX_SECRET_VALUE_CHARS} characters.`,
    ],
    [
      'an unknown kind',
      { name: 'k', value, kind: 'aws_key' },
      /^`kind`: Invalid option: expected one of "anthropic_api_key"\|"claude_oauth_token"\|"openai_api_key"\|"gemini_api_key"\|"registry_credentials"\|"git_credentials"\|"other"\.$/,
    ],
    [
      'git_credentials without a host',
      { name: 'k', value, kind: 'git_credentials' },
      /^Field `value`: a secret of kind git_credentials is `username:token@host`/,
    ],
    ['an unknown field', { name: 'k', value, scope: 'team' }, 'Unknown field `scope`.'],
    ['a description too long', { name: 'k', value, description: 'd'.repeat(501) }, /^`description`: Too big/],
  ];
  for (const [what, body, detail] of cases) {
    const res = await store(team.admin, body);
    expect([what, res.status, res.body.error_code]).toEqual([what, 400, 'invalid_request']);
    if (typeof detail === 'string') expect([what, res.body.detail]).toEqual([what, detail]);
    else expect([what, res.body.detail]).toEqual([what, expect.stringMatching(detail)]);
    expect(res.text).not.toContain(value.slice(8));
  }
  const withQuery = await ctx.api
    .post('/api/v1/agent/secrets?force=1')
    .set(auth(team.admin))
    .send({ name: 'k', value });
  expectProblem(withQuery, 400, 'invalid_request', 'Unknown query parameter `force`.');
  expect(await secretRows(team.teamId)).toEqual([]);
  expect((await list(team.admin)).body.secrets).toEqual([]);
});

test("another team's secret is not found (GET and DELETE 404), is not listed, and its name is free for the team", async () => {
  const owner = await newTeam();
  const stranger = await newTeam();
  const value = anthropicKey();
  expect((await store(owner.admin, { name: 'private', value })).status).toBe(201);

  expectProblem(await getSecret(stranger.admin, 'private'), 404, 'resource_not_found', 'No secret private.');
  expectProblem(await deleteSecret(stranger.admin, 'private'), 404, 'resource_not_found', 'No secret private.');
  expect((await list(stranger.admin)).body.secrets).toEqual([]);

  // Names are per team: the stranger's own "private" is another secret.
  const theirs = openaiKey();
  const res = await store(stranger.admin, { name: 'private', value: theirs });
  expect([res.status, res.body.kind]).toEqual([201, 'openai_api_key']);
  const [ownerRow] = await secretRows(owner.teamId);
  expect([ownerRow!.kind, decryptSecret(ownerRow!.encrypted_value, secretsKeyring)]).toEqual([
    'anthropic_api_key',
    value,
  ]);
});

test('DELETE is 204 and the secret is gone: GET 404, a second DELETE 404, not listed', async () => {
  const team = await newTeam();
  expect((await store(team.admin, { name: 'short-lived', value: openaiKey() })).status).toBe(201);
  expect((await store(team.admin, { name: 'kept', value: openaiKey() })).status).toBe(201);

  const deleted = await deleteSecret(team.admin, 'short-lived');
  expect([deleted.status, deleted.text]).toEqual([204, '']);
  expectProblem(await getSecret(team.admin, 'short-lived'), 404, 'resource_not_found', 'No secret short-lived.');
  expectProblem(await deleteSecret(team.admin, 'short-lived'), 404, 'resource_not_found', 'No secret short-lived.');
  expect((await list(team.admin)).body.secrets.map((s: { name: string }) => s.name)).toEqual(['kept']);
  expect((await secretRows(team.teamId)).map((r) => r.name)).toEqual(['kept']);
  // A path that no secret name can be is not found either.
  expectProblem(await getSecret(team.admin, '-nope'), 404, 'resource_not_found', 'No secret -nope.');
});

test(`TEAM_MAX_SECRETS=${CAP}: past the cap a create is 409 naming the variable and stores nothing; a replace at the cap is fine; a delete makes room`, async () => {
  const team = await newTeam();
  // All at once: the cap holds against a race.
  const answers = await Promise.all(
    Array.from({ length: CAP + 3 }, (_, i) => store(team.admin, { name: `key-${i}`, value: openaiKey() })),
  );
  expect(answers.filter((r) => r.status === 201)).toHaveLength(CAP);
  const refused = answers.filter((r) => r.status !== 201);
  expect(refused.map((r) => r.status)).toEqual([409, 409, 409]);
  expect(refused[0]!.body).toMatchObject({
    error_code: 'conflict',
    retryable: false,
    detail: `Your team has ${CAP} secrets, the most it may have (TEAM_MAX_SECRETS); delete one before adding another.`,
  });
  const rows = await secretRows(team.teamId);
  expect(rows).toHaveLength(CAP);

  const existing = rows[0]!.name;
  expect((await store(team.admin, { name: existing, value: openaiKey() })).status).toBe(200);
  expect((await store(team.admin, { name: 'one-more', value: openaiKey() })).status).toBe(409);
  expect((await deleteSecret(team.admin, existing)).status).toBe(204);
  expect((await store(team.admin, { name: 'one-more', value: openaiKey() })).status).toBe(201);
  expect(await secretRows(team.teamId)).toHaveLength(CAP);

  // Another team has a cap of its own.
  const other = await newTeam();
  expect((await store(other.admin, { name: 'key-0', value: openaiKey() })).status).toBe(201);
});

describe('runs naming a harness and its secret', () => {
  let team: Team;
  const claudeValue = anthropicKey();
  const openaiValue = openaiKey();

  beforeAll(async () => {
    team = await newTeam();
    expect((await store(team.admin, { name: 'claude-key', value: claudeValue })).status).toBe(201);
    expect((await store(team.admin, { name: 'openai-key', value: openaiValue })).status).toBe(201);
  });

  async function teamRunRecords(): Promise<{ runs: number; idempotency_records: number }> {
    const [counts] = (await ctx.dataSource.query(
      `SELECT (SELECT count(*)::int FROM runs WHERE team_id = $1) AS runs,
              (SELECT count(*)::int FROM idempotency_records i JOIN principals p ON p.uid = i.principal_uid
                WHERE p.team_id = $1) AS idempotency_records`,
      [team.teamId],
    )) as { runs: number; idempotency_records: number }[];
    return counts!;
  }

  const createRun = (config: Record<string, unknown>) =>
    ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(team.member))
      .set('Idempotency-Key', uniqueName('idem'))
      .send({ prompt: 'Fix the flaky test', config });

  test('a missing secret, one of the wrong kind, one for another harness, an unknown harness or reasoning level: 400 naming the field, and no run', async () => {
    const before = await teamRunRecords();
    const cases: [string, Record<string, unknown>, string][] = [
      [
        'a secret the team does not have',
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'missing-key' } },
        '`config.harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "missing-key". Store it first with `POST /api/v1/agent/secrets` (or `agent-runs secrets set missing-key`).',
      ],
      [
        'an OpenAI key for Claude Code',
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'openai-key' } },
        '`config.harness_auth_secrets.claude_auth_secret_name`: the secret "openai-key" is of kind openai_api_key; Claude Code takes anthropic_api_key or claude_oauth_token.',
      ],
      [
        'an Anthropic key for Codex',
        { harness: { type: 'codex' }, harness_auth_secrets: { codex_auth_secret_name: 'claude-key' } },
        '`config.harness_auth_secrets.codex_auth_secret_name`: the secret "claude-key" is of kind anthropic_api_key; Codex CLI takes openai_api_key.',
      ],
      [
        "Claude Code's secret on a Codex run",
        { harness: { type: 'codex' }, harness_auth_secrets: { claude_auth_secret_name: 'claude-key' } },
        '`config.harness_auth_secrets.claude_auth_secret_name` applies only when `config.harness.type` is "claude"; this run\'s harness is "codex". Leave it out, or set the harness.',
      ],
      [
        "Claude Code's secret without a harness",
        { harness_auth_secrets: { claude_auth_secret_name: 'claude-key' } },
        '`config.harness_auth_secrets.claude_auth_secret_name` applies only when `config.harness.type` is "claude"; this run\'s harness is "oz". Leave it out, or set the harness.',
      ],
      [
        'an unknown harness',
        { harness: { type: 'cursor' } },
        '`config.harness.type`: unknown harness "cursor"; the harnesses are oz, claude, codex, gemini.',
      ],
      [
        'a reasoning level Codex does not know',
        { harness: { type: 'codex', reasoning_level: 'extreme' } },
        '`config.harness.reasoning_level`: Codex CLI takes minimal, low, medium, high, not "extreme".',
      ],
      [
        'a secret name no secret can have',
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'my key' } },
        '`config.harness_auth_secrets.claude_auth_secret_name`: must be 1 to 128 letters, digits, `_`, `.` or `-`, starting with a letter or digit.',
      ],
      [
        'an unknown field of harness_auth_secrets',
        { harness: { type: 'gemini' }, harness_auth_secrets: { gemini_auth_secret_name: 'x' } },
        'Unknown field `config.harness_auth_secrets.gemini_auth_secret_name` (did you mean `config.harness_auth_secrets.claude_auth_secret_name`?).',
      ],
    ];
    for (const [what, config, detail] of cases) {
      const res = await createRun(config);
      expect([what, res.status, res.body.error_code, res.body.detail]).toEqual([what, 400, 'invalid_request', detail]);
      expect(await teamRunRecords()).toEqual(before);
    }
  });

  test("a schedule's agent_config is checked as its runs' config will be: 400 naming the field, and no schedule", async () => {
    const schedules = async () =>
      ((await ctx.api.get('/api/v1/agent/schedules').set(auth(team.member))).body as { schedules: unknown[] })
        .schedules;
    const createSchedule = (agentConfig: Record<string, unknown>) =>
      ctx.api
        .post('/api/v1/agent/schedules')
        .set(auth(team.member))
        .send({
          name: uniqueName('nightly'),
          cron_schedule: '0 3 * * *',
          prompt: 'Tidy up',
          enabled: false,
          agent_config: agentConfig,
        });
    const cases: [Record<string, unknown>, string][] = [
      [
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'missing-key' } },
        '`agent_config.harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "missing-key". Store it first with `POST /api/v1/agent/secrets` (or `agent-runs secrets set missing-key`).',
      ],
      [
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'openai-key' } },
        '`agent_config.harness_auth_secrets.claude_auth_secret_name`: the secret "openai-key" is of kind openai_api_key; Claude Code takes anthropic_api_key or claude_oauth_token.',
      ],
      [
        { harness: { type: 'codex', reasoning_level: 'extreme' } },
        '`agent_config.harness.reasoning_level`: Codex CLI takes minimal, low, medium, high, not "extreme".',
      ],
    ];
    for (const [agentConfig, detail] of cases) {
      const res = await createSchedule(agentConfig);
      expect([res.status, res.body.error_code, res.body.detail]).toEqual([400, 'invalid_request', detail]);
    }
    expect(await schedules()).toEqual([]);

    const ok = await createSchedule({
      harness: { type: 'claude' },
      harness_auth_secrets: { claude_auth_secret_name: 'claude-key' },
    });
    expect(ok.status).toBe(201);
    // PUT replaces the definition, checked the same way; the schedule stays as it was.
    const put = await ctx.api.put(`/api/v1/agent/schedules/${ok.body.id}`).set(auth(team.member)).send({
      name: ok.body.name,
      cron_schedule: '0 3 * * *',
      prompt: 'Tidy up',
      enabled: false,
      agent_config: cases[0]![0],
    });
    expect([put.status, put.body.detail]).toEqual([400, cases[0]![1]]);
    const kept = await ctx.api.get(`/api/v1/agent/schedules/${ok.body.id}`).set(auth(team.member));
    expect(kept.body.agent_config.harness_auth_secrets).toEqual({ claude_auth_secret_name: 'claude-key' });
    expect((await ctx.api.delete(`/api/v1/agent/schedules/${ok.body.id}`).set(auth(team.member))).status).toBe(200);
  });

  test('the right secret for the harness is accepted: the run names it, and carries no value', async () => {
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [
        { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'claude-key' } },
        { claude_auth_secret_name: 'claude-key' },
      ],
      [
        {
          harness: { type: 'codex', reasoning_level: 'high' },
          harness_auth_secrets: { codex_auth_secret_name: 'openai-key', claude_auth_secret_name: null },
        },
        { codex_auth_secret_name: 'openai-key' },
      ],
    ];
    for (const [config, named] of cases) {
      const res = await createRun(config);
      expect([res.status, res.body.state]).toEqual([201, 'QUEUED']);
      createdRuns.push(res.body.run_id as string);
      const run = await getRun(ctx, team.member, res.body.run_id as string);
      expect(run.agent_config).toMatchObject({ harness: config.harness, harness_auth_secrets: named });
      expect(JSON.stringify(run)).not.toContain(claudeValue);
      expect(JSON.stringify(run)).not.toContain(openaiValue);
    }
  });
});
