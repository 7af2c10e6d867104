import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** Factories: the CRUD and validate endpoints, identities joining them, and discovery of FACTORY.md files. */

const FACTORIES = '/api/v1/agent/factories';
const IDENTITIES = '/api/v1/agent/identities';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const REVIEW_TEAM = `---
name: review-team
description: Reviews a change and fixes what the review finds
agents:
  - name: lead
    agent_type: FOREMAN
    prompt: You lead the review team.
  - name: fixer
    agent_type: IMPLEMENT
    base_model: openai/fixer-model
    skills: [acme/tools:lint]
  - name: checker
    agent_type: REVIEW
---

Every change gets a test.
`;
const REVIEW_TEAM_PATH = '.agents/factories/review-team/FACTORY.md';
const BROKEN = `---
name: broken
description: Does not parse
agents:
  - name: only
    agent_type: BUILDER
    colour: red
---
`;

const git = createGitHost();
git.addRepo('acme', 'shop', { 'README.md': '# Shop\n', [REVIEW_TEAM_PATH]: REVIEW_TEAM });
git.addRepo('acme', 'broken', {
  '.agents/factories/broken/FACTORY.md': BROKEN,
  '.agents/factories/huge/FACTORY.md': `${REVIEW_TEAM.replace('review-team', 'huge')}\n${'x'.repeat(300 * 1024)}\n`,
  'docs/FACTORY.md': REVIEW_TEAM.replace('name: review-team', 'name: linked'),
  'docs/dir/FACTORY.md': REVIEW_TEAM.replace('name: review-team', 'name: dir-link'),
});

git.addRepo('acme', 'trees', {
  '.agents/factories/tree-team/factory.yaml':
    'name: tree-team\ndescription: A factory as a tree\ninstructions: Test everything.\n',
  '.agents/factories/tree-team/agents/lead/agent.md': '---\nagent_type: FOREMAN\ndescription: Leads\n---\nYou lead.\n',
  '.agents/factories/tree-team/agents/fixer/agent.md':
    '---\nagent_type: IMPLEMENT\nbase_model: openai/fixer-model\nskills: [acme/tools:lint]\n---\nYou fix.\n',
  '.agents/factories/bad-tree/factory.yaml': 'name: bad-tree\ndescription: Two foremen\n',
  '.agents/factories/bad-tree/agents/one/agent.md': '---\nagent_type: FOREMAN\n---\n',
  '.agents/factories/bad-tree/agents/two/agent.md': '---\nagent_type: FOREMAN\ncolour: red\n---\n',
  '.agents/factories/both/FACTORY.md': REVIEW_TEAM.replace('name: review-team', 'name: both'),
  '.agents/factories/both/factory.yaml': 'name: both\ndescription: Twice\n',
});

/** Commits changes to a repository of the git host: a string writes the file, null removes it, `{symlink}` makes one. */
function commit(owner: string, repo: string, changes: Record<string, string | null | { symlink: string }>): void {
  const dir = path.join(git.root, owner, repo);
  for (const [file, content] of Object.entries(changes)) {
    if (content === null) rmSync(path.join(dir, file));
    else if (typeof content === 'object') {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      symlinkSync(content.symlink, path.join(dir, file));
    } else {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), content);
    }
  }
  const run = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  run('add', '-A');
  run('-c', 'user.name=fixture', '-c', 'user.email=fixture@localhost', 'commit', '--quiet', '-m', 'change');
}

// Repository bytes are untrusted: a FACTORY.md, or a factory's directory, that is a symlink is not followed.
commit('acme', 'broken', {
  '.agents/factories/linked/FACTORY.md': { symlink: '../../../docs/FACTORY.md' },
  '.agents/factories/dir-link': { symlink: '../../docs/dir' },
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { GIT_BASE_URL: git.baseUrl } });
});
afterAll(async () => {
  await ctx?.close();
});

interface FactoryItem {
  uid: string;
  name: string;
  description: string | null;
  environment_id: string | null;
  instructions: string | null;
  agents: { uid: string; name: string; agent_type: string }[];
  source: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

async function newFactory(key: string, body: Record<string, unknown>): Promise<FactoryItem> {
  const res = await ctx.api.post(FACTORIES).set(auth(key)).send(body);
  expect(res.status).toBe(201);
  return res.body as FactoryItem;
}

async function listFactories(key: string): Promise<FactoryItem[]> {
  const res = await ctx.api.get(FACTORIES).set(auth(key));
  expect(res.status).toBe(200);
  return (res.body as { factories: FactoryItem[] }).factories;
}

async function newIdentity(key: string, body: Record<string, unknown>) {
  return ctx.api.post(IDENTITIES).set(auth(key)).send(body);
}

/** Runs the scripted model once in the environment and waits for the run to succeed; returns the run id. */
async function runInEnvironment(key: string, envId: string): Promise<string> {
  const marker = uniqueName('factory-run');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const runId = await createRun(ctx, key, { prompt: `Look around ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  return runId;
}

async function notices(runId: string): Promise<string[]> {
  return (await transcript(ctx, runId)).filter((e) => e.kind === 'notice').map((e) => e.payload.message as string);
}

test('create, list, get, update and delete a factory', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'shop' });
  expect(await listFactories(key)).toEqual([]);

  const res = await ctx.api
    .post(FACTORIES)
    .set(auth(key))
    .send({ name: 'triage-crew', description: 'Sorts incoming issues', environment_id: envId });
  expect(res.status).toBe(201);
  const created = res.body as FactoryItem;
  expect(created).toEqual({
    uid: expect.stringMatching(/^fac_[A-Za-z0-9_-]{16}$/),
    name: 'triage-crew',
    description: 'Sorts incoming issues',
    environment_id: envId,
    instructions: null,
    agents: [],
    source: { type: 'API' },
    created_at: expect.stringMatching(ISO_MS),
    updated_at: expect.stringMatching(ISO_MS),
  });
  expect(res.headers.location).toBe(`${FACTORIES}/${created.uid}`);
  expect((await ctx.api.get(res.headers.location!).set(auth(key))).body).toEqual(created);
  expect(await listFactories(key)).toEqual([created]);

  // Agents join with factory_uid and are listed with the factory.
  const lead = (await newIdentity(key, { name: 'lead', agent_type: 'FOREMAN', factory_uid: created.uid })).body as {
    uid: string;
  };
  const sorter = (await newIdentity(key, { name: 'sorter', agent_type: 'TRIAGE', factory_uid: created.uid })).body as {
    uid: string;
  };
  const withAgents = (await ctx.api.get(`${FACTORIES}/${created.uid}`).set(auth(key))).body as FactoryItem;
  expect(withAgents.agents).toEqual([
    { uid: lead.uid, name: 'lead', agent_type: 'FOREMAN' },
    { uid: sorter.uid, name: 'sorter', agent_type: 'TRIAGE' },
  ]);
  expect((await listFactories(key))[0]!.agents).toEqual(withAgents.agents);

  // PUT replaces what the body sets; what it leaves out is cleared.
  const updated = await ctx.api.put(`${FACTORIES}/${created.uid}`).set(auth(key)).send({ name: 'triage' });
  expect(updated.status).toBe(200);
  expect(updated.body).toMatchObject({
    uid: created.uid,
    name: 'triage',
    description: null,
    environment_id: null,
    agents: withAgents.agents,
    created_at: created.created_at,
  });
  expect(Date.parse((updated.body as FactoryItem).updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

  // Deleting the factory detaches its agents; they live on.
  expect((await ctx.api.delete(`${FACTORIES}/${created.uid}`).set(auth(key))).status).toBe(204);
  expect((await ctx.api.get(`${FACTORIES}/${created.uid}`).set(auth(key))).status).toBe(404);
  expect(await listFactories(key)).toEqual([]);
  const detached = await ctx.api.get(`${IDENTITIES}/${lead.uid}`).set(auth(key));
  expect(detached.status).toBe(200);
  expect(detached.body.factory_uid).toBeNull();
  expect((await ctx.api.delete(`${FACTORIES}/${created.uid}`).set(auth(key))).status).toBe(404);
});

test('bad requests are 400 (or 404 for another team environment) naming the problem, and change nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  const otherEnv = await createEnvironment(ctx, other.key, { name: 'theirs' });
  const factory = await newFactory(key, { name: 'keep-me', description: 'unchanged' });

  const cases: [Record<string, unknown>, number, string][] = [
    [{}, 400, '`name` is required'],
    [{ name: '' }, 400, '`name`'],
    [{ name: 'x', colour: 'red' }, 400, '`colour`'],
    [{ name: 'x', agents: [] }, 400, '`agents`'],
    [{ name: 'x', environment_id: 'not a uid!' }, 400, '`environment_id`'],
    [{ name: 'x', environment_id: otherEnv }, 400, '`environment_id`: no environment'],
  ];
  for (const [body, status, detail] of cases) {
    for (const res of [
      await ctx.api.post(FACTORIES).set(auth(key)).send(body),
      await ctx.api.put(`${FACTORIES}/${factory.uid}`).set(auth(key)).send(body),
    ]) {
      expect({ body, status: res.status }).toEqual({ body, status });
      expect(res.body.detail).toContain(detail);
    }
  }
  const query = await ctx.api.get(`${FACTORIES}?color=red`).set(auth(key));
  expect(query.status).toBe(400);
  expect(query.body.detail).toContain('color');
  expect((await ctx.api.post(`${FACTORIES}?dry_run=1`).set(auth(key)).send({ name: 'x' })).status).toBe(400);
  expect((await ctx.api.delete(`${FACTORIES}/${factory.uid}?force=1`).set(auth(key))).status).toBe(400);

  expect(await listFactories(key)).toEqual([factory]);
});

test("another team's factory is 404 everywhere and missing from its list", async () => {
  const { key } = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  const factory = await newFactory(key, { name: 'private' });
  expect(await listFactories(other.key)).toEqual([]);
  expect((await ctx.api.get(`${FACTORIES}/${factory.uid}`).set(auth(other.key))).status).toBe(404);
  expect((await ctx.api.put(`${FACTORIES}/${factory.uid}`).set(auth(other.key)).send({ name: 'x' })).status).toBe(404);
  expect((await ctx.api.delete(`${FACTORIES}/${factory.uid}`).set(auth(other.key))).status).toBe(404);
  // Nor can its agents join it.
  const join = await newIdentity(other.key, { name: 'spy', factory_uid: factory.uid });
  expect(join.status).toBe(404);
  expect(join.body.detail).toContain('`factory_uid`');
  expect(await listFactories(key)).toEqual([factory]);
});

test('identities: factory_uid must name a factory of the team; a factory has one FOREMAN', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await newFactory(key, { name: 'builders' });

  const unknown = await newIdentity(key, { name: 'ghost', factory_uid: 'fac_nope' });
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ error_code: 'resource_not_found' });
  expect(unknown.body.detail).toContain('`factory_uid`');
  expect(unknown.body.detail).toContain('fac_nope');

  const lead = await newIdentity(key, { name: 'lead', agent_type: 'FOREMAN', factory_uid: factory.uid });
  expect(lead.status).toBe(201);
  const second = await newIdentity(key, { name: 'second-lead', agent_type: 'FOREMAN', factory_uid: factory.uid });
  expect(second.status).toBe(409);
  expect(second.body).toMatchObject({ error_code: 'conflict', retryable: false });
  expect(second.body.detail).toContain(`"lead" (${lead.body.uid})`);

  // Changing another member into a FOREMAN is refused the same way; the foreman itself may be saved again.
  const worker = await newIdentity(key, { name: 'worker', agent_type: 'IMPLEMENT', factory_uid: factory.uid });
  expect(worker.status).toBe(201);
  const promote = await ctx.api
    .put(`${IDENTITIES}/${worker.body.uid}`)
    .set(auth(key))
    .send({ name: 'worker', agent_type: 'FOREMAN', factory_uid: factory.uid });
  expect(promote.status).toBe(409);
  const again = await ctx.api
    .put(`${IDENTITIES}/${lead.body.uid}`)
    .set(auth(key))
    .send({ name: 'lead', agent_type: 'FOREMAN', factory_uid: factory.uid, prompt: 'Lead well.' });
  expect(again.status).toBe(200);

  const agents = (await ctx.api.get(IDENTITIES).set(auth(key))).body.agents as { name: string; agent_type: string }[];
  expect(agents.map((a) => [a.name, a.agent_type])).toEqual([
    ['lead', 'FOREMAN'],
    ['worker', 'IMPLEMENT'],
  ]);
});

test('two agents racing to be the foreman of one factory: exactly one wins', async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await newFactory(key, { name: 'race' });
  const results = await Promise.all(
    ['first', 'second', 'third'].map((name) =>
      newIdentity(key, { name, agent_type: 'FOREMAN', factory_uid: factory.uid }),
    ),
  );
  expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  const listed = (await ctx.api.get(`${FACTORIES}/${factory.uid}`).set(auth(key))).body as FactoryItem;
  expect(listed.agents.filter((a) => a.agent_type === 'FOREMAN')).toHaveLength(1);
});

test("a factory's FOREMAN keeps this service's own loop: a CLI harness for it is a 400 saying what to fix, and changes nothing", async () => {
  const { key } = await ctx.newTeamKey();
  const factory = await newFactory(key, { name: 'crew' });
  const foremanLoop = (agent: string, cli: string, type: string) =>
    `agent "${agent}" is the FOREMAN of factory "crew" (${factory.uid}), and a foreman runs this service's own agent loop ("oz"), not ${cli} ("${type}"): it hands work to the factory's agents through this service's \`dispatch_agent\` and \`wait_for_runs\` tools, which ${cli} does not have.`;
  const getAgent = async (uid: string) => (await ctx.api.get(`${IDENTITIES}/${uid}`).set(auth(key))).body as object;
  const put = (uid: string, body: Record<string, unknown>) =>
    ctx.api.put(`${IDENTITIES}/${uid}`).set(auth(key)).send(body);

  // Made a foreman with a CLI harness: refused, naming the field sent.
  let res = await newIdentity(key, {
    name: 'lead',
    agent_type: 'FOREMAN',
    factory_uid: factory.uid,
    harness: { type: 'claude' },
  });
  expect([res.status, res.body.error_code, res.body.detail]).toEqual([
    400,
    'invalid_request',
    `\`harness.type\`: ${foremanLoop('lead', 'Claude Code', 'claude')} Leave \`harness\` out or send \`{"type": "oz"}\`; a CLI harness suits the factory's other agents.`,
  ]);
  res = await newIdentity(key, {
    name: 'lead',
    agent_type: 'FOREMAN',
    factory_uid: factory.uid,
    base_harness: 'codex',
  });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringMatching(/^`base_harness`: agent "lead" is the FOREMAN/),
  ]);
  expect((await ctx.api.get(`${FACTORIES}/${factory.uid}`).set(auth(key))).body.agents).toEqual([]);

  // The factory's other agents may use one; made its foreman, such an agent must change harness in the same request.
  const builder = (
    await newIdentity(key, {
      name: 'builder',
      agent_type: 'IMPLEMENT',
      factory_uid: factory.uid,
      harness: { type: 'claude' },
    })
  ).body as { uid: string; harness: unknown };
  expect(builder.harness).toEqual({ type: 'claude' });
  const asBuilt = await getAgent(builder.uid);
  res = await put(builder.uid, { agent_type: 'FOREMAN' });
  expect([res.status, res.body.detail]).toEqual([
    400,
    `\`agent_type\`: ${foremanLoop('builder', 'Claude Code', 'claude')} This agent's harness is "claude": send \`harness: {"type": "oz"}\` with it, or give it another \`agent_type\`.`,
  ]);
  expect(await getAgent(builder.uid)).toEqual(asBuilt);
  res = await put(builder.uid, { agent_type: 'FOREMAN', harness: { type: 'oz' } });
  expect([res.status, res.body.agent_type, res.body.harness]).toEqual([200, 'FOREMAN', { type: 'oz' }]);
  const foreman = await getAgent(builder.uid);
  res = await put(builder.uid, { harness: { type: 'gemini' } });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringContaining(foremanLoop('builder', 'Gemini CLI', 'gemini')),
  ]);
  expect(await getAgent(builder.uid)).toEqual(foreman);

  // A CLI foreman of no factory yet cannot join one as its foreman.
  const other = await newFactory(key, { name: 'other-crew' });
  const loner = (await newIdentity(key, { name: 'loner', agent_type: 'FOREMAN', harness: { type: 'codex' } })).body as {
    uid: string;
  };
  res = await put(loner.uid, { factory_uid: other.uid });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringMatching(/^`factory_uid`: agent "loner" is the FOREMAN of factory "other-crew"/),
  ]);
  expect((await getAgent(loner.uid)) as { factory_uid: string | null }).toMatchObject({ factory_uid: null });

  // A run of the foreman, or a schedule of it, that asks for a CLI harness.
  res = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'Plan the work', agent_identity_uid: builder.uid, config: { harness: { type: 'claude' } } });
  expect([res.status, res.body.detail]).toEqual([
    400,
    `\`config.harness.type\`: ${foremanLoop('builder', 'Claude Code', 'claude')} Leave \`config.harness\` out: the foreman's own loop is its default.`,
  ]);
  res = await ctx.api
    .post('/api/v1/agent/schedules')
    .set(auth(key))
    .send({
      name: 'nightly',
      cron_schedule: '0 9 * * *',
      prompt: 'Plan',
      agent_uid: builder.uid,
      agent_config: { harness: { type: 'codex' } },
    });
  expect([res.status, res.body.detail]).toEqual([
    400,
    expect.stringMatching(/^`agent_config.harness.type`: agent "builder" is the FOREMAN/),
  ]);

  // Dispatching to a foreman whose row has a CLI harness (written before this rule, or by hand).
  await ctx.dataSource.query(`UPDATE agent_identities SET harness = '{"type": "claude"}' WHERE uid = $1`, [
    builder.uid,
  ]);
  res = await ctx.api.post(`${FACTORIES}/${factory.uid}/runs`).set(auth(key)).send({ prompt: 'Build it' });
  expect([res.status, res.body.error_code, res.body.detail]).toEqual([
    400,
    'invalid_request',
    `\`harness.type\` of agent ${builder.uid}: ${foremanLoop('builder', 'Claude Code', 'claude')} Set it to \`{"type": "oz"}\` with \`PUT /api/v1/agent/identities/${builder.uid}\`.`,
  ]);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(key))).body.runs).toEqual([]);
  expect(
    ((await ctx.api.get('/api/v1/agent/schedules').set(auth(key))).body as { schedules: unknown[] }).schedules,
  ).toEqual([]);
  // The fix it names works.
  expect((await put(builder.uid, { harness: { type: 'oz' } })).status).toBe(200);
  expect(await ctx.dataSource.query(`SELECT harness FROM agent_identities WHERE uid = $1`, [builder.uid])).toEqual([
    { harness: null },
  ]);
});

test('validate: a valid FACTORY.md comes back parsed; an invalid one with every error and its path', async () => {
  const { key } = await ctx.newTeamKey();
  const valid = await ctx.api
    .post(`${FACTORIES}/validate`)
    .set(auth(key))
    .send({ content: REVIEW_TEAM, path: REVIEW_TEAM_PATH });
  expect(valid.status).toBe(200);
  expect(valid.body).toEqual({
    valid: true,
    factory: {
      name: 'review-team',
      description: 'Reviews a change and fixes what the review finds',
      agents: [
        {
          name: 'lead',
          agent_type: 'FOREMAN',
          description: null,
          prompt: 'You lead the review team.',
          base_model: null,
          skills: [],
        },
        {
          name: 'fixer',
          agent_type: 'IMPLEMENT',
          description: null,
          prompt: null,
          base_model: 'openai/fixer-model',
          skills: ['acme/tools:lint'],
        },
        { name: 'checker', agent_type: 'REVIEW', description: null, prompt: null, base_model: null, skills: [] },
      ],
      instructions: 'Every change gets a test.',
    },
  });

  const invalid = await ctx.api
    .post(`${FACTORIES}/validate`)
    .set(auth(key))
    .send({ content: BROKEN, path: '.agents/factories/fixed/FACTORY.md' });
  expect(invalid.status).toBe(200);
  expect(invalid.body.valid).toBe(false);
  expect((invalid.body.errors as { path: string }[]).map((e) => e.path)).toEqual([
    'name',
    'agents[0].colour',
    'agents[0].agent_type',
  ]);
  for (const error of invalid.body.errors as { message: string }[]) expect(error.message.length).toBeGreaterThan(10);

  const twoForemen = REVIEW_TEAM.replace('agent_type: REVIEW', 'agent_type: FOREMAN');
  const foremen = await ctx.api.post(`${FACTORIES}/validate`).set(auth(key)).send({ content: twoForemen });
  expect(foremen.body).toEqual({
    valid: false,
    errors: [{ path: 'agents[2].agent_type', message: expect.stringContaining('"lead") is already the foreman') }],
  });

  // The request itself: content is required, nothing else is taken.
  const missing = await ctx.api.post(`${FACTORIES}/validate`).set(auth(key)).send({});
  expect([missing.status, missing.body.detail]).toEqual([400, '`content` is required.']);
  const extra = await ctx.api.post(`${FACTORIES}/validate`).set(auth(key)).send({ content: REVIEW_TEAM, strict: true });
  expect(extra.status).toBe(400);
  expect(extra.body.detail).toContain('`strict`');
  // Validating records nothing.
  expect(await listFactories(key)).toEqual([]);
});

test('discovery: a FACTORY.md in an environment repository becomes a FILE factory, follows the file and leaves with it', async () => {
  // An admin key: what the file alone may change is refused even to an admin.
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const other = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'shop', github_repos: [{ owner: 'acme', repo: 'shop' }] });
  const firstRun = await runInEnvironment(key, envId);

  const [factory, ...more] = await listFactories(key);
  expect(more).toEqual([]);
  expect(factory).toMatchObject({
    name: 'review-team',
    description: 'Reviews a change and fixes what the review finds',
    environment_id: envId,
    instructions: 'Every change gets a test.',
    source: { type: 'FILE', environment_id: envId, repository: 'acme/shop', path: REVIEW_TEAM_PATH },
  });
  // Agents made in one sync may share a creation millisecond: compared by name.
  expect(factory!.agents.map((a) => [a.name, a.agent_type]).sort()).toEqual([
    ['review-team/checker', 'REVIEW'],
    ['review-team/fixer', 'IMPLEMENT'],
    ['review-team/lead', 'FOREMAN'],
  ]);
  expect(await listFactories(other.key)).toEqual([]);
  expect((await notices(firstRun)).join('\n')).toContain(`review-team (${factory!.uid}, 3 agents`);

  // The agents are identities of the team, set from the file.
  const fixerUid = factory!.agents.find((a) => a.name === 'review-team/fixer')!.uid;
  const fixer = await ctx.api.get(`${IDENTITIES}/${fixerUid}`).set(auth(key));
  expect(fixer.body).toMatchObject({
    name: 'review-team/fixer',
    agent_type: 'IMPLEMENT',
    factory_uid: factory!.uid,
    environment_id: envId,
    base_model: 'openai/fixer-model',
    skills: ['acme/tools:lint'],
  });

  // Only the file changes it: the API refuses, naming the file.
  const file = `acme/shop:${REVIEW_TEAM_PATH}`;
  for (const res of [
    await ctx.api.put(`${FACTORIES}/${factory!.uid}`).set(auth(key)).send({ name: 'renamed' }),
    await ctx.api.delete(`${FACTORIES}/${factory!.uid}`).set(auth(key)),
    await newIdentity(key, { name: 'intruder', factory_uid: factory!.uid }),
    await ctx.api.put(`${IDENTITIES}/${fixerUid}`).set(auth(key)).send({ name: 'review-team/fixer' }),
    await ctx.api.delete(`${IDENTITIES}/${fixerUid}`).set(auth(key)),
  ]) {
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error_code: 'conflict', retryable: false });
    expect(res.body.detail).toContain(file);
  }

  // A second run of the same files changes nothing.
  await runInEnvironment(key, envId);
  expect(await listFactories(key)).toEqual([factory]);

  // Remove an agent and change another: the next run in the environment follows the file.
  commit('acme', 'shop', {
    [REVIEW_TEAM_PATH]: REVIEW_TEAM.replace(/  - name: checker\n    agent_type: REVIEW\n/, '').replace(
      'base_model: openai/fixer-model',
      'base_model: openai/better-model',
    ),
  });
  await runInEnvironment(key, envId);
  const [changed] = await listFactories(key);
  expect(changed!.uid).toBe(factory!.uid);
  const checker = factory!.agents.find((a) => a.name === 'review-team/checker')!;
  expect(changed!.agents).toEqual(factory!.agents.filter((a) => a !== checker));
  expect(Date.parse(changed!.updated_at)).toBeGreaterThan(Date.parse(factory!.updated_at));
  expect((await ctx.api.get(`${IDENTITIES}/${checker.uid}`).set(auth(key))).status).toBe(404);
  expect((await ctx.api.get(`${IDENTITIES}/${fixerUid}`).set(auth(key))).body.base_model).toBe('openai/better-model');

  // A file broken later is a notice, and the factory stays as it last was.
  commit('acme', 'shop', { [REVIEW_TEAM_PATH]: REVIEW_TEAM.replace('agent_type: IMPLEMENT', 'agent_type: BUILDER') });
  const brokenRun = await runInEnvironment(key, envId);
  expect((await notices(brokenRun)).join('\n')).toContain(`Skipped factory file ${file}: agents[1].agent_type:`);
  expect(await listFactories(key)).toEqual([changed]);

  // Deleting the file deletes the factory and its agents.
  commit('acme', 'shop', { [REVIEW_TEAM_PATH]: null });
  const goneRun = await runInEnvironment(key, envId);
  expect(await listFactories(key)).toEqual([]);
  expect((await ctx.api.get(`${IDENTITIES}/${factory!.agents[0]!.uid}`).set(auth(key))).status).toBe(404);
  expect((await notices(goneRun)).join('\n')).toContain(`removed review-team (${factory!.uid}`);

  // Put back, it is a new factory again.
  commit('acme', 'shop', { [REVIEW_TEAM_PATH]: REVIEW_TEAM });
  await runInEnvironment(key, envId);
  const [back] = await listFactories(key);
  expect(back!.uid).not.toBe(factory!.uid);
  expect(back!.agents.map((a) => a.name)).toEqual(['review-team/lead', 'review-team/fixer', 'review-team/checker']);

  // Deleting the environment deletes the factories found in it, and their agents.
  expect((await ctx.api.delete(`/api/v1/agent/environments/${envId}`).set(auth(key))).status).toBe(204);
  expect(await listFactories(key)).toEqual([]);
  expect((await ctx.api.get(IDENTITIES).set(auth(key))).body.agents).toEqual([]);
});

test('discovery: a malformed, oversized or symlinked FACTORY.md is a notice on the run, which still succeeds, and no factory', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'broken',
    github_repos: [{ owner: 'acme', repo: 'broken' }],
  });
  const runId = await runInEnvironment(key, envId);
  const skipped = (await notices(runId)).filter((n) => n.startsWith('Skipped factory file'));
  expect(skipped).toHaveLength(4);
  const [broken, dirLink, huge, linked] = skipped;
  expect(broken).toContain('acme/broken:.agents/factories/broken/FACTORY.md: ');
  expect(broken).toContain('agents[0].colour: unknown field');
  expect(broken).toContain('agents[0].agent_type: must be one of');
  expect(dirLink).toContain('acme/broken:.agents/factories/dir-link: file: is a symlink; not followed');
  expect(huge).toMatch(
    /acme\/broken:\.agents\/factories\/huge\/FACTORY\.md: file: is \d+ bytes, above the limit of 262144 bytes/,
  );
  expect(linked).toContain('acme/broken:.agents/factories/linked/FACTORY.md: file: is a symlink; not followed');
  expect(await listFactories(key)).toEqual([]);
  expect((await ctx.api.get(IDENTITIES).set(auth(key))).body.agents).toEqual([]);
});

test('discovery: a factory tree (factory.yaml and agents/<name>/agent.md) becomes a FILE factory; a bad one is a notice at its line', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'trees', github_repos: [{ owner: 'acme', repo: 'trees' }] });
  const runId = await runInEnvironment(key, envId);
  const factories = await listFactories(key);
  expect(factories.map((f) => f.name).sort()).toEqual(['both', 'tree-team']);
  const tree = factories.find((f) => f.name === 'tree-team')!;
  expect(tree).toMatchObject({
    description: 'A factory as a tree',
    instructions: 'Test everything.',
    source: { type: 'FILE', repository: 'acme/trees', path: '.agents/factories/tree-team/factory.yaml' },
  });
  expect(tree.agents.map((a) => [a.name, a.agent_type]).sort()).toEqual([
    ['tree-team/fixer', 'IMPLEMENT'],
    ['tree-team/lead', 'FOREMAN'],
  ]);
  const fixer = await ctx.api
    .get(`${IDENTITIES}/${tree.agents.find((a) => a.name === 'tree-team/fixer')!.uid}`)
    .set(auth(key));
  expect(fixer.body).toMatchObject({ base_model: 'openai/fixer-model', skills: ['acme/tools:lint'] });
  // The FACTORY.md of a directory that holds both formats is the one recorded; the tree is skipped.
  expect(factories.find((f) => f.name === 'both')!.source).toMatchObject({ path: '.agents/factories/both/FACTORY.md' });
  const skipped = (await notices(runId)).filter((n) => n.startsWith('Skipped factory file'));
  expect(skipped).toHaveLength(2);
  const [bad, both] = skipped;
  expect(bad).toContain('acme/trees:.agents/factories/bad-tree/factory.yaml: ');
  expect(bad).toContain('.agents/factories/bad-tree/agents/two/agent.md:3:1: unknown field `colour`');
  expect(bad).toContain('(FF_UNKNOWN_FIELD)');
  expect(both).toContain('.agents/factories/both holds a FACTORY.md too');

  // An agent file that cannot be read skips the tree, as a tree: what it recorded stays.
  commit('acme', 'trees', {
    '.agents/factories/tree-team/agents/fixer/agent.md': null,
  });
  commit('acme', 'trees', {
    '.agents/factories/tree-team/agents/fixer/agent.md': { symlink: '../lead/agent.md' },
  });
  const symlinkRun = await runInEnvironment(key, envId);
  expect((await notices(symlinkRun)).join('\n')).toContain(
    'Skipped factory file acme/trees:.agents/factories/tree-team/factory.yaml: file: .agents/factories/tree-team/agents/fixer/agent.md is a symlink; not followed',
  );
  expect((await listFactories(key)).find((f) => f.name === 'tree-team')).toEqual(tree);

  // A FACTORY.md added beside a recorded tree replaces it, agents and all.
  commit('acme', 'trees', {
    '.agents/factories/tree-team/FACTORY.md': REVIEW_TEAM.replace('name: review-team', 'name: tree-team'),
  });
  await runInEnvironment(key, envId);
  const replaced = (await listFactories(key)).find((f) => f.name === 'tree-team')!;
  expect(replaced.source).toMatchObject({ path: '.agents/factories/tree-team/FACTORY.md' });
  expect(replaced.agents.map((a) => a.name).sort()).toEqual(['tree-team/checker', 'tree-team/fixer', 'tree-team/lead']);
});
