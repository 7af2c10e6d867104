import { createApiKeyService } from '../services/keys/api-key-service';
import type { McpServerConfig } from '../core/run-types';
import { decryptMcpServers } from '../core/secrets';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { PLAN_MODE_NOTE } from '../activities/agent-step-activities';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** Agent identities: a team's named agents, their keys, and runs executed as them. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx?.close();
});

const PATH = '/api/v1/agent/identities';

async function newIdentity(key: string, body: Record<string, unknown>) {
  const res = await ctx.api.post(PATH).set(auth(key)).send(body);
  expect(res.status).toBe(201);
  return res.body as { uid: string; name: string; [k: string]: unknown };
}

test('create, list, get, update and delete an identity; another team sees none of it', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const other = await ctx.newTeamKey('personal', undefined, 'admin');
  const created = await newIdentity(key, {
    name: 'reviewer',
    description: 'Reviews pull requests',
    prompt: 'You review code.',
    agent_type: 'REVIEW',
    base_model: 'openai/gpt-4o',
    mcp_servers: { docs: { url: 'https://mcp.example.com/sse', headers: { Authorization: 'Bearer sekret-token' } } },
    harness: { type: 'oz' },
    memory: null,
  });
  expect(created).toMatchObject({
    name: 'reviewer',
    agent_type: 'REVIEW',
    available: true,
    skills: [],
    secrets: [],
    memory: { attached_stores: [], auto_memory: { enabled: false } },
    mcp_servers: { docs: { url: 'https://mcp.example.com/sse', headers: { Authorization: '***' } } },
  });
  expect(JSON.stringify(created)).not.toContain('sekret-token');

  expect((await ctx.api.get(PATH).set(auth(key))).body.agents.map((a: { uid: string }) => a.uid)).toEqual([
    created.uid,
  ]);
  expect((await ctx.api.get(`${PATH}/${created.uid}`).set(auth(key))).body.description).toBe('Reviews pull requests');
  const updated = await ctx.api
    .put(`${PATH}/${created.uid}`)
    .set(auth(key))
    .send({ name: 'senior-reviewer', agent_type: 'REVIEW' });
  expect(updated.status).toBe(200);
  // A partial update: what is not sent keeps its value.
  expect(updated.body).toMatchObject({
    name: 'senior-reviewer',
    description: 'Reviews pull requests',
    prompt: 'You review code.',
    base_model: 'openai/gpt-4o',
    mcp_servers: created.mcp_servers,
  });

  // Another team: nothing to see, change or delete.
  expect((await ctx.api.get(PATH).set(auth(other.key))).body.agents).toEqual([]);
  expect((await ctx.api.get(`${PATH}/${created.uid}`).set(auth(other.key))).status).toBe(404);
  expect((await ctx.api.put(`${PATH}/${created.uid}`).set(auth(other.key)).send({ name: 'x' })).status).toBe(404);
  expect((await ctx.api.delete(`${PATH}/${created.uid}`).set(auth(other.key))).status).toBe(404);

  // A duplicate name is a clear, final conflict.
  const duplicate = await ctx.api.post(PATH).set(auth(key)).send({ name: 'senior-reviewer' });
  expect(duplicate.status).toBe(409);
  expect(duplicate.body).toMatchObject({ error_code: 'conflict', retryable: false });

  expect((await ctx.api.delete(`${PATH}/${created.uid}`).set(auth(key))).status).toBe(204);
  expect((await ctx.api.get(`${PATH}/${created.uid}`).set(auth(key))).status).toBe(404);
  // The name is free again.
  await newIdentity(key, { name: 'senior-reviewer' });
});

test('fields the clients send that this service cannot honour are 400 feature_not_available naming them', async () => {
  const { key } = await ctx.newTeamKey();
  const cases: [Record<string, unknown>, string][] = [
    [{ secrets: [{ name: 'GH' }] }, 'secrets'],
    [{ memory: { attached_stores: [{ uid: 'm', access: 'read_only', instructions: 'x' }] } }, 'memory'],
    [{ default_runner_uid: 'runner-1' }, 'default_runner_uid'],
  ];
  for (const [extra, field] of cases) {
    const res = await ctx.api
      .post(PATH)
      .set(auth(key))
      .send({ name: uniqueName('agent'), ...extra });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('feature_not_available');
    expect(res.body.detail).toContain(`\`${field}\``);
  }
  expect((await ctx.api.get(PATH).set(auth(key))).body.agents).toEqual([]);
});

test('a run with agent_identity_uid executes as the identity: its defaults fill the config, its name is the executor', async () => {
  const person = await ctx.newTeamKey('personal', undefined, 'admin');
  const marker = uniqueName('as-identity');
  ctx.model.script(marker, () => ({ text: `answer for ${marker}` }));
  const identity = await newIdentity(person.key, {
    name: uniqueName('docs-bot'),
    prompt: `Identity prompt ${marker}`,
    base_model: 'openai/identity-model',
  });
  const runId = await createRun(ctx, person.key, { prompt: `Do it ${marker}`, agent_identity_uid: identity.uid });
  const run = await waitForState(ctx, person.key, runId, ['SUCCEEDED']);
  expect(run.creator).toMatchObject({ uid: person.uid, type: 'user' });
  expect(run.executor).toEqual({ uid: identity.uid, display_name: identity.name, type: 'service_account' });
  expect(run.agent_config).toMatchObject({
    model_id: 'openai/identity-model',
    name: identity.name,
    base_prompt: `Identity prompt ${marker}`,
  });
  const [request] = ctx.model.calls(marker);
  expect(request!.model).toBe('identity-model');
  expect(request!.system).toContain(`Identity prompt ${marker}`);
  // The agent's answer is the SUCCEEDED run's status message.
  expect(run.status_message).toEqual({ message: `answer for ${marker}` });

  // A key made for the identity (`npm run keys -- create --kind agent --agent <uid>`) runs as it too.
  const { rawKey } = await createApiKeyService(ctx).create({ kind: 'agent', agentUid: identity.uid });
  const byKey = await createRun(ctx, rawKey, { prompt: `By its key ${marker}` });
  expect((await getRun(ctx, rawKey, byKey)).executor).toMatchObject({ uid: identity.uid });
  await waitForState(ctx, rawKey, byKey, ['SUCCEEDED']);

  // Deleting the identity revokes its keys.
  expect((await ctx.api.delete(`${PATH}/${identity.uid}`).set(auth(person.key))).status).toBe(204);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(rawKey))).status).toBe(401);
});

test('on_behalf_of: only an agent key whose agent allows it, only for a member of the team', async () => {
  const team = uniqueName('obo-team');
  const person = await ctx.newTeamKey('personal', team, 'admin');
  const agent = await ctx.newTeamKey('agent', team);
  const marker = uniqueName('obo');
  ctx.model.script(marker, () => ({ text: 'ok' }));
  const body = { prompt: `On behalf ${marker}`, on_behalf_of: person.uid };

  const fromPerson = await ctx.api.post('/api/v1/agent/runs').set(auth(person.key)).send(body);
  expect(fromPerson.status).toBe(403);
  const notEnabled = await ctx.api.post('/api/v1/agent/runs').set(auth(agent.key)).send(body);
  expect(notEnabled.status).toBe(403);
  expect(notEnabled.body.detail).toContain('on_behalf_of_enabled');

  const identity = (await ctx.api.get(`${PATH}/${agent.uid}`).set(auth(person.key))).body as { name: string };
  await ctx.api
    .put(`${PATH}/${agent.uid}`)
    .set(auth(person.key))
    .send({ name: identity.name, on_behalf_of_enabled: true })
    .expect(200);
  const stranger = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(agent.key))
    .send({ ...body, on_behalf_of: 'usr_nobody' });
  expect(stranger.status).toBe(400);
  const runId = await createRun(ctx, agent.key, body);
  const run = await getRun(ctx, agent.key, runId);
  expect(run.creator).toMatchObject({ uid: person.uid, type: 'user' });
  expect(run.executor).toMatchObject({ uid: agent.uid });
  await waitForState(ctx, agent.key, runId, ['SUCCEEDED']);
});

test('create-request fields of the clients: plan mode is honoured; what cannot be is feature_not_available', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('plan');
  ctx.model.script(marker, () => ({ text: 'the plan' }));
  const runId = await createRun(ctx, key, {
    prompt: `Plan it ${marker}`,
    mode: 'plan',
    interactive: true,
    config: { harness: { type: 'oz' }, worker_host: 'warp', memory_stores: [] },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(ctx.model.calls(marker)[0]!.messages[0]!.content).toBe(`${PLAN_MODE_NOTE}\n\nPlan it ${marker}`);
  expect((await getRun(ctx, key, runId)).agent_config).not.toHaveProperty('harness');

  const refused: [Record<string, unknown>, number, string, string][] = [
    [{ mode: 'orchestrate' }, 400, 'feature_not_available', 'mode'],
    // A harness is honoured (test/harness-*.test.ts); what its CLI cannot take is refused.
    [
      { config: { harness: { type: 'codex', reasoning_level: 'extreme' } } },
      400,
      'invalid_request',
      'config.harness.reasoning_level',
    ],
    // A worker that is not running: the request is valid, the service's present state refuses it.
    [{ config: { worker_host: 'gpu-box-1' } }, 409, 'conflict', 'config.worker_host'],
    [{ config: { runner_id: 'r1' } }, 400, 'feature_not_available', 'config.runner_id'],
    [{ config: { model_id: 'mistral/large' } }, 400, 'invalid_request', 'config.model_id'],
  ];
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'x', mode: 'orchestrate' });
  expect([followup.status, followup.body.error_code]).toEqual([400, 'feature_not_available']);
  for (const [extra, status, code, field] of refused) {
    const res = await ctx.api
      .post('/api/v1/agent/runs')
      .set(auth(key))
      .send({ prompt: 'x', ...extra });
    expect({ status: res.status, code: res.body.error_code }).toEqual({ status, code });
    expect(res.body.detail).toContain(`\`${field}\``);
  }
});

test('an update changes only the fields sent: null keeps, an empty value clears, a masked credential keeps the stored one', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await newIdentity(key, {
    name: uniqueName('partial'),
    description: 'first',
    prompt: 'You fix things.',
    base_model: 'openai/gpt-4o',
    skills: ['acme/tools:lint'],
    worker_host: 'host-a',
    mcp_servers: { docs: { url: 'https://mcp.example.com/sse', headers: { Authorization: 'Bearer kept-token' } } },
  });
  const put = (body: Record<string, unknown>) => ctx.api.put(`${PATH}/${created.uid}`).set(auth(key)).send(body);
  const storedAuthorization = async () => {
    const [row] = (await ctx.dataSource.query(`SELECT mcp_servers FROM agent_identities WHERE uid = $1`, [
      created.uid,
    ])) as { mcp_servers: Record<string, McpServerConfig> | null }[];
    return (
      row!.mcp_servers &&
      decryptMcpServers(row!.mcp_servers, resolveSecretsKeyring(ctx.config)).docs?.headers?.Authorization
    );
  };

  let res = await put({ description: 'second' });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    name: created.name,
    description: 'second',
    prompt: 'You fix things.',
    base_model: 'openai/gpt-4o',
    skills: ['acme/tools:lint'],
    worker_host: 'host-a',
  });
  res = await put({ description: null, prompt: '', base_model: '', worker_host: '', skills: [] });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    description: 'second',
    prompt: null,
    base_model: null,
    worker_host: null,
    skills: [],
  });

  // What a GET shows, sent back: the mask keeps the stored credential.
  const shown = (await ctx.api.get(`${PATH}/${created.uid}`).set(auth(key))).body as { mcp_servers: unknown };
  expect(shown.mcp_servers).toEqual({
    docs: { url: 'https://mcp.example.com/sse', headers: { Authorization: '***' } },
  });
  expect((await put({ mcp_servers: shown.mcp_servers })).status).toBe(200);
  expect(await storedAuthorization()).toBe('Bearer kept-token');
  // A mask where nothing is stored is refused, and changes nothing.
  res = await put({
    description: 'third',
    mcp_servers: { other: { url: 'https://x.example.com', headers: { T: '***' } } },
  });
  expect(res.status).toBe(400);
  expect(res.body.detail).toContain('`mcp_servers.other.headers.T`');
  expect((await ctx.api.get(`${PATH}/${created.uid}`).set(auth(key))).body.description).toBe('second');
  // An empty object clears the servers.
  expect((await put({ mcp_servers: {} })).body.mcp_servers).toBeNull();
  expect(await storedAuthorization()).toBeNull();
  // A name cannot be cleared.
  expect((await put({ name: '' })).status).toBe(400);
});

test('roles: a member key cannot grant an agent on_behalf_of, delete agents or manage webhooks; an admin key can', async () => {
  const team = uniqueName('roles-team');
  const admin = await ctx.newTeamKey('personal', team, 'admin');
  const member = await ctx.newTeamKey('personal', team);
  const agent = await ctx.newTeamKey('agent', team);
  const expectRefused = (res: { status: number; body: { error_code?: string; detail?: string } }) => {
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('not_authorized');
    expect(res.body.detail).toContain('admin key');
  };
  const identityOf = async (uid: string) =>
    (await ctx.api.get(`${PATH}/${uid}`).set(auth(admin.key))).body as { on_behalf_of_enabled: boolean };

  // The attack: an agent key grants itself on_behalf_of on its own identity.
  expectRefused(await ctx.api.put(`${PATH}/${agent.uid}`).set(auth(agent.key)).send({ on_behalf_of_enabled: true }));
  expectRefused(await ctx.api.put(`${PATH}/${agent.uid}`).set(auth(member.key)).send({ on_behalf_of_enabled: true }));
  expect((await identityOf(agent.uid)).on_behalf_of_enabled).toBe(false);
  const onBehalf = { prompt: 'x', on_behalf_of: member.uid };
  expect((await ctx.api.post('/api/v1/agent/runs').set(auth(agent.key)).send(onBehalf)).status).toBe(403);
  // Nor a new agent made with it.
  const named = uniqueName('obo-agent');
  expectRefused(await ctx.api.post(PATH).set(auth(member.key)).send({ name: named, on_behalf_of_enabled: true }));
  expect(
    ((await ctx.api.get(PATH).set(auth(admin.key))).body.agents as { name: string }[]).map((a) => a.name),
  ).not.toContain(named);
  // Other changes, and sending the value it already has, are a member's to make.
  expect(
    (
      await ctx.api
        .put(`${PATH}/${agent.uid}`)
        .set(auth(agent.key))
        .send({ description: 'mine', on_behalf_of_enabled: false })
    ).status,
  ).toBe(200);

  // Deleting an agent revokes its keys: an admin's to do.
  expectRefused(await ctx.api.delete(`${PATH}/${agent.uid}`).set(auth(member.key)));
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(agent.key))).status).toBe(200);

  // Webhooks: members may look, only admins subscribe and delete.
  const hook = { url: 'https://93.184.216.34/agent-runs' }; // a public address, checked without DNS
  expectRefused(await ctx.api.post('/api/v1/agent/webhooks').set(auth(member.key)).send(hook));
  const created = await ctx.api.post('/api/v1/agent/webhooks').set(auth(admin.key)).send(hook);
  expect(created.status).toBe(201);
  expect((await ctx.api.get('/api/v1/agent/webhooks').set(auth(member.key))).status).toBe(200);
  expectRefused(await ctx.api.delete(`/api/v1/agent/webhooks/${created.body.id as string}`).set(auth(member.key)));

  // The admin can do each of these.
  expect(
    (await ctx.api.put(`${PATH}/${agent.uid}`).set(auth(admin.key)).send({ on_behalf_of_enabled: true })).status,
  ).toBe(200);
  expect(
    (await ctx.api.delete(`/api/v1/agent/webhooks/${created.body.id as string}`).set(auth(admin.key))).status,
  ).toBe(204);
  expect((await ctx.api.delete(`${PATH}/${agent.uid}`).set(auth(admin.key))).status).toBe(204);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(agent.key))).status).toBe(401);
});

/** Stores a managed secret of the key's team (an admin key's to do). */
async function storeSecret(key: string, name: string, value: string): Promise<void> {
  const res = await ctx.api.post('/api/v1/agent/secrets').set(auth(key)).send({ name, value });
  expect([res.status, res.body.name]).toEqual([201, name]);
}

/** A run's `agent_config` as it was created; the run is then cancelled (no CLI needs to work it here). */
async function agentConfigOfNewRun(key: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const runId = await createRun(ctx, key, body);
  const config = (await getRun(ctx, key, runId)).agent_config as Record<string, unknown>;
  await ctx.api.post(`/api/v1/agent/runs/${runId}/cancel`).set(auth(key));
  await waitForState(ctx, key, runId, ['CANCELLED', 'FAILED', 'SUCCEEDED', 'ERROR']);
  return config;
}

test('harness and harness_auth_secrets are stored and shown; an update that leaves them out keeps them, one that sends them replaces them', async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  await storeSecret(key, 'team-claude', 'sk-ant-api-for-identities');
  await storeSecret(key, 'team-codex', 'sk-openai-for-identities');
  const created = await newIdentity(key, {
    name: uniqueName('claude-agent'),
    harness: { type: 'claude', model_id: 'claude-haiku-4-5', reasoning_level: '' },
    harness_auth_secrets: { claude_auth_secret_name: 'team-claude', codex_auth_secret_name: null },
  });
  const claude = {
    harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
    base_harness: 'claude',
    harness_auth_secrets: { claude_auth_secret_name: 'team-claude' },
  };
  expect(created).toMatchObject({ ...claude, base_model: null });
  const get = async () => (await ctx.api.get(`${PATH}/${created.uid}`).set(auth(key))).body as Record<string, unknown>;
  expect(await get()).toEqual(created);
  const listed = (await ctx.api.get(PATH).set(auth(key))).body.agents as Record<string, unknown>[];
  expect(listed.find((a) => a.uid === created.uid)).toEqual(created);
  const [row] = (await ctx.dataSource.query(
    `SELECT harness, harness_auth_secrets FROM agent_identities WHERE uid = $1`,
    [created.uid],
  )) as Record<string, unknown>[];
  expect(row).toEqual({ harness: claude.harness, harness_auth_secrets: claude.harness_auth_secrets });

  const put = (body: Record<string, unknown>) => ctx.api.put(`${PATH}/${created.uid}`).set(auth(key)).send(body);
  // Not sent (or null): kept.
  let res = await put({
    description: 'renamed nothing',
    harness: null,
    harness_auth_secrets: null,
    base_harness: null,
  });
  expect([res.status, res.body]).toEqual([200, expect.objectContaining({ ...claude, description: 'renamed nothing' })]);

  // A new harness with the old harness's secret kept is refused, naming the kept field; nothing changes.
  const before = await get();
  res = await put({ harness: { type: 'codex', reasoning_level: 'high' } });
  expect([res.status, res.body.error_code]).toEqual([400, 'invalid_request']);
  expect(res.body.detail).toBe(
    '`harness_auth_secrets.claude_auth_secret_name` (kept: this request does not send `harness_auth_secrets`) applies only when `harness.type` is "claude"; this agent\'s harness is "codex". Send `harness_auth_secrets` with the secret for its harness, or `{}` to clear it.',
  );
  expect(await get()).toEqual(before);

  res = await put({
    harness: { type: 'codex', reasoning_level: 'high' },
    harness_auth_secrets: { codex_auth_secret_name: 'team-codex' },
  });
  const codex = {
    harness: { type: 'codex', reasoning_level: 'high' },
    base_harness: 'codex',
    harness_auth_secrets: { codex_auth_secret_name: 'team-codex' },
  };
  expect([res.status, res.body]).toEqual([200, expect.objectContaining(codex)]);
  // `base_harness` (the older field) naming the harness it has keeps it whole.
  res = await put({ base_harness: 'codex' });
  expect([res.status, res.body]).toEqual([200, expect.objectContaining(codex)]);
  // "" clears it, to this service's own loop; `{}` clears the secrets.
  res = await put({ base_harness: '', harness_auth_secrets: {} });
  expect([res.status, res.body]).toEqual([
    200,
    expect.objectContaining({ harness: { type: 'oz' }, base_harness: 'oz', harness_auth_secrets: null }),
  ]);
  res = await put({ base_harness: 'gemini' });
  expect([res.status, res.body]).toEqual([
    200,
    expect.objectContaining({ harness: { type: 'gemini' }, base_harness: 'gemini', harness_auth_secrets: null }),
  ]);
  res = await put({ harness: { type: 'oz' }, base_harness: 'oz' });
  expect([res.status, res.body]).toEqual([
    200,
    expect.objectContaining({ harness: { type: 'oz' }, base_harness: 'oz' }),
  ]);
  expect(
    await ctx.dataSource.query(`SELECT harness, harness_auth_secrets FROM agent_identities WHERE uid = $1`, [
      created.uid,
    ]),
  ).toEqual([{ harness: null, harness_auth_secrets: null }]);
});

test("harness fields are checked as a run's are: a 400 naming the field, and nothing recorded", async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const other = await ctx.newTeamKey('personal', undefined, 'admin');
  await storeSecret(key, 'codex-key', 'sk-openai-checked');
  await storeSecret(other.key, 'their-claude', 'sk-ant-api-theirs');
  const cases: [Record<string, unknown>, string][] = [
    [
      { harness: { type: 'cursor' } },
      '`harness.type`: unknown harness "cursor"; the harnesses are oz, claude, codex, gemini',
    ],
    [{ base_harness: 'cursor' }, '`base_harness`: unknown harness "cursor"'],
    [
      { harness: { type: 'codex', reasoning_level: 'extreme' } },
      '`harness.reasoning_level`: Codex CLI takes minimal, low, medium, high, not "extreme".',
    ],
    [
      { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'missing' } },
      '`harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "missing".',
    ],
    [
      { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'their-claude' } },
      '`harness_auth_secrets.claude_auth_secret_name`: your team has no secret named "their-claude".',
    ],
    [
      { harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'codex-key' } },
      '`harness_auth_secrets.claude_auth_secret_name`: the secret "codex-key" is of kind openai_api_key; Claude Code takes anthropic_api_key or claude_oauth_token.',
    ],
    [
      { harness_auth_secrets: { codex_auth_secret_name: 'codex-key' } },
      '`harness_auth_secrets.codex_auth_secret_name` applies only when `harness.type` is "codex"; this agent\'s harness is "oz".',
    ],
    [
      { harness_auth_secrets: { gemini_auth_secret_name: 'x' } },
      'Unknown field `harness_auth_secrets.gemini_auth_secret_name`',
    ],
    [
      { harness: { type: 'codex' }, base_harness: 'claude' },
      '`base_harness` is "claude" but `harness.type` is "codex"',
    ],
    [
      { harness: { type: 'claude' }, base_model: 'openai/gpt-4o' },
      '`harness.type`: Claude Code ("claude") takes its model from `harness.model_id`, and this agent has `base_model` "openai/gpt-4o"',
    ],
    [{ base_harness: 'gemini', base_model: 'openai/gpt-4o' }, '`base_harness`: Gemini CLI ("gemini") takes its model'],
  ];
  for (const [extra, detail] of cases) {
    const res = await ctx.api
      .post(PATH)
      .set(auth(key))
      .send({ name: uniqueName('checked'), ...extra });
    expect({ extra, status: res.status, code: res.body.error_code }).toEqual({
      extra,
      status: 400,
      code: 'invalid_request',
    });
    expect(res.body.detail).toContain(detail);
  }
  expect((await ctx.api.get(PATH).set(auth(key))).body.agents).toEqual([]);

  // An update is checked on what the agent would be: the base_model it keeps counts.
  const agent = await newIdentity(key, { name: uniqueName('oz-agent'), base_model: 'openai/gpt-4o' });
  const put = (body: Record<string, unknown>) => ctx.api.put(`${PATH}/${agent.uid}`).set(auth(key)).send(body);
  let res = await put({ harness: { type: 'codex' } });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringContaining('and this agent has `base_model` "openai/gpt-4o"'),
  ]);
  expect((await ctx.api.get(`${PATH}/${agent.uid}`).set(auth(key))).body).toEqual(agent);
  res = await put({ harness: { type: 'codex' }, base_model: '' });
  expect([res.status, res.body]).toEqual([
    200,
    expect.objectContaining({ harness: { type: 'codex' }, base_model: null }),
  ]);
  res = await put({ base_model: 'openai/gpt-4o' });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringMatching(/^`base_model`: this agent's harness is Codex CLI \("codex"\)/),
  ]);
  expect((await ctx.api.get(`${PATH}/${agent.uid}`).set(auth(key))).body.base_model).toBeNull();
});

test("a run of an agent takes its harness and harness secret unless its own config names them; a secret gone since is a 400 naming the agent's field", async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  await storeSecret(key, 'agent-claude', 'sk-ant-api-agent');
  await storeSecret(key, 'run-claude', 'sk-ant-api-run');
  await storeSecret(key, 'run-codex', 'sk-openai-run');
  const agent = await newIdentity(key, {
    name: uniqueName('claude-runner'),
    harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
    harness_auth_secrets: { claude_auth_secret_name: 'agent-claude' },
  });
  const prompt = 'Say hello.';

  const inherited = await agentConfigOfNewRun(key, { prompt, agent_identity_uid: agent.uid });
  expect(inherited).toMatchObject({
    name: agent.name,
    model_id: 'openai/test-model',
    harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
    harness_auth_secrets: { claude_auth_secret_name: 'agent-claude' },
  });
  // The run's own harness wins, `oz` included; the agent's secret goes with the agent's harness only.
  const oz = await agentConfigOfNewRun(key, {
    prompt,
    agent_identity_uid: agent.uid,
    config: { harness: { type: 'oz' } },
  });
  expect(oz).not.toHaveProperty('harness');
  expect(oz).not.toHaveProperty('harness_auth_secrets');
  const codex = await agentConfigOfNewRun(key, {
    prompt,
    agent_identity_uid: agent.uid,
    config: { harness: { type: 'codex' }, harness_auth_secrets: { codex_auth_secret_name: 'run-codex' } },
  });
  expect([codex.harness, codex.harness_auth_secrets]).toEqual([
    { type: 'codex' },
    { codex_auth_secret_name: 'run-codex' },
  ]);
  const ownSecret = await agentConfigOfNewRun(key, {
    prompt,
    agent_identity_uid: agent.uid,
    config: { harness_auth_secrets: { claude_auth_secret_name: 'run-claude' } },
  });
  expect([ownSecret.harness, ownSecret.harness_auth_secrets]).toEqual([
    { type: 'claude', model_id: 'claude-haiku-4-5' },
    { claude_auth_secret_name: 'run-claude' },
  ]);

  // The agent's secret deleted: its runs are refused at once, naming the agent's field.
  expect((await ctx.api.delete('/api/v1/agent/secrets/agent-claude').set(auth(key))).status).toBe(204);
  const runsBefore = (await ctx.api.get('/api/v1/agent/runs').set(auth(key))).body.runs as unknown[];
  const res = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send({ prompt, agent_identity_uid: agent.uid });
  expect([res.status, res.body.error_code, res.body.detail]).toEqual([
    400,
    'invalid_request',
    `\`harness_auth_secrets.claude_auth_secret_name\` of agent "${agent.name}" (${agent.uid}), which this run takes: your team has no secret named "agent-claude". Store it first with \`POST /api/v1/agent/secrets\` (or \`agent-runs secrets set agent-claude\`).`,
  ]);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(key))).body.runs).toHaveLength(runsBefore.length);
  // A run that names its own secret does not need the agent's.
  const fixed = await agentConfigOfNewRun(key, {
    prompt,
    agent_identity_uid: agent.uid,
    config: { harness_auth_secrets: { claude_auth_secret_name: 'run-claude' } },
  });
  expect(fixed.harness_auth_secrets).toEqual({ claude_auth_secret_name: 'run-claude' });
  // And an update of the agent that does not touch its harness is not held to the deleted secret.
  expect((await ctx.api.put(`${PATH}/${agent.uid}`).set(auth(key)).send({ description: 'still here' })).status).toBe(
    200,
  );
});
