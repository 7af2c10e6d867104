import { ensurePythonClient, ensureWarpClient, WARP_CLIENT } from '../infra/python-client';
import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';
import { warpClientCalls, type WarpResult } from './helpers/warp-client';

/** The CloudEnvironment endpoints, and the two places runs and skills meet environments. */
const git = createGitHost();
git.addRepo('acme', 'ops', {
  'README.md': '# Ops\n',
  '.agents/skills/deploy/SKILL.md':
    '---\nname: deploy\ndescription: Deploy the service to staging\n---\n\n# Deploy\n\nRun `make deploy` and watch the smoke test.\n',
});
git.addRepo('acme', 'tools', {
  '.agents/skills/lint/SKILL.md': '---\nname: lint\ndescription: Lint the code\n---\n\nRun `make lint`.\n',
  // Malformed: no description.
  '.agents/skills/broken/SKILL.md': '---\nname: broken\n---\n\nNo description here.\n',
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { GIT_BASE_URL: git.baseUrl } });
  await Promise.all([ensureWarpClient(), ensurePythonClient()]);
}, 360_000);
afterAll(async () => {
  await ctx?.close();
});

const PATH = '/api/v1/agent/environments';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UID = /^[A-Za-z0-9]{22}$/;

interface EnvItem {
  uid: string;
  config: Record<string, unknown>;
  setup_failed: boolean;
  last_updated: string;
  created_at: string;
  creator: { uid: string; type: string; display_name: string };
}

async function post(key: string, config: Record<string, unknown>): Promise<EnvItem> {
  const res = await ctx.api.post(PATH).set(auth(key)).send({ config });
  expect(res.status).toBe(201);
  return res.body as EnvItem;
}

async function listUids(key: string, query = ''): Promise<string[]> {
  const res = await ctx.api.get(`${PATH}${query}`).set(auth(key));
  expect(res.status).toBe(200);
  return (res.body as { environments: EnvItem[] }).environments.map((e) => e.uid);
}

/** Waits (polling, no fixed sleep) until the clock is past `iso`, so the next write gets a later timestamp. */
async function clockPast(iso: string): Promise<void> {
  await waitFor(
    async () => Date.now(),
    (now) => now > Date.parse(iso) + 1,
    `the clock to pass ${iso}`,
  );
}

function expectProblem(res: { status: number; headers: Record<string, string>; body: unknown }, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.body as Record<string, unknown>;
  expect(body.status).toBe(status);
  return body as { error_code: string; detail: string; type: string; instance: string };
}

test('POST creates an environment: 201, Location, the CloudEnvironment; GET returns the same', async () => {
  const { key, uid: creatorUid } = await ctx.newTeamKey();
  const config = {
    name: 'web',
    description: 'The web application',
    docker_image: 'node:20-bookworm',
    github_repos: [
      { owner: 'acme', repo: 'web' },
      { owner: 'acme', repo: 'web.docs' },
    ],
    setup_commands: ['npm ci', 'npm run build'],
  };
  const before = Date.now();
  const res = await ctx.api.post(PATH).set(auth(key)).send({ config });
  expect(res.status).toBe(201);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const env = res.body as EnvItem;
  expect(env).toEqual({
    uid: expect.stringMatching(UID),
    config,
    setup_failed: false,
    last_updated: expect.stringMatching(ISO_MS),
    created_at: expect.stringMatching(ISO_MS),
    creator: { uid: creatorUid, type: 'user', display_name: expect.any(String) },
  });
  expect(env.creator.display_name).not.toBe('');
  expect(res.headers.location).toBe(`${PATH}/${env.uid}`);
  expect(Date.parse(env.created_at)).toBeGreaterThanOrEqual(before - 1000);
  expect(Date.parse(env.created_at)).toBeLessThanOrEqual(Date.now() + 1000);
  expect(Date.parse(env.last_updated)).toBeGreaterThanOrEqual(Date.parse(env.created_at));

  const fetched = await ctx.api.get(res.headers.location!).set(auth(key));
  expect(fetched.status).toBe(200);
  expect(fetched.body).toEqual(env);

  // Uids are random: a second environment gets another one.
  const second = await post(key, { name: 'web' });
  expect(second.uid).toMatch(UID);
  expect(second.uid).not.toBe(env.uid);
  expect(second.config).toEqual({ name: 'web' });
});

test('the list sorts by last_updated (default, newest first) and by name (ascending)', async () => {
  const { key } = await ctx.newTeamKey();
  expect(await listUids(key)).toEqual([]);
  // Created in an order that differs from both name order and its reverse.
  const bravo = await post(key, { name: 'bravo' });
  await clockPast(bravo.last_updated);
  const charlie = await post(key, { name: 'charlie' });
  await clockPast(charlie.last_updated);
  const alpha = await post(key, { name: 'alpha' });

  const res = await ctx.api.get(PATH).set(auth(key));
  expect(res.status).toBe(200);
  expect(Object.keys(res.body as object)).toEqual(['environments', 'page_info']);
  const listed = (res.body as { environments: EnvItem[] }).environments;
  expect(listed.map((e) => e.uid)).toEqual([alpha.uid, charlie.uid, bravo.uid]);
  expect(listed[0]).toEqual(alpha);
  expect(await listUids(key, '?sort_by=last_updated')).toEqual([alpha.uid, charlie.uid, bravo.uid]);
  expect(await listUids(key, '?sort_by=name')).toEqual([alpha.uid, bravo.uid, charlie.uid]);

  // Updating the oldest makes it the newest.
  await clockPast(alpha.last_updated);
  expect(
    (
      await ctx.api
        .put(`${PATH}/${bravo.uid}`)
        .set(auth(key))
        .send({ config: { name: 'bravo' } })
    ).status,
  ).toBe(200);
  expect(await listUids(key)).toEqual([bravo.uid, alpha.uid, charlie.uid]);
  expect(await listUids(key, '?sort_by=name')).toEqual([alpha.uid, bravo.uid, charlie.uid]);
});

test('an unknown sort_by or an unknown query parameter is 400 naming it', async () => {
  const { key } = await ctx.newTeamKey();
  await post(key, { name: 'only' });
  const badSort = expectProblem(await ctx.api.get(`${PATH}?sort_by=created_at`).set(auth(key)), 400);
  expect(badSort.error_code).toBe('invalid_request');
  expect(badSort.detail).toContain('sort_by');
  const unknown = expectProblem(await ctx.api.get(`${PATH}?colour=red`).set(auth(key)), 400);
  expect(unknown.error_code).toBe('invalid_request');
  expect(unknown.detail).toContain('colour');
  expect(unknown.instance).toBe(PATH);
});

test('PUT replaces the config and bumps last_updated; an invalid PUT changes nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const env = await post(key, {
    name: 'api',
    description: 'before',
    docker_image: 'node:18',
    github_repos: [{ owner: 'acme', repo: 'api' }],
    setup_commands: ['make'],
  });
  const other = await post(key, { name: 'other' });
  expect(await listUids(key)).toEqual([other.uid, env.uid]);
  await clockPast(other.last_updated);

  const replacement = { name: 'api-v2', setup_commands: ['make build', 'make test'] };
  const res = await ctx.api.put(`${PATH}/${env.uid}`).set(auth(key)).send({ config: replacement });
  expect(res.status).toBe(200);
  const updated = res.body as EnvItem;
  // Replaced, not merged: description, docker_image and github_repos are gone.
  expect(updated).toEqual({ ...env, config: replacement, last_updated: expect.stringMatching(ISO_MS) });
  expect(Date.parse(updated.last_updated)).toBeGreaterThan(Date.parse(env.last_updated));
  expect(Date.parse(updated.last_updated)).toBeGreaterThan(Date.parse(other.last_updated));
  expect((await ctx.api.get(`${PATH}/${env.uid}`).set(auth(key))).body).toEqual(updated);
  expect(await listUids(key)).toEqual([env.uid, other.uid]);

  const bad = await ctx.api
    .put(`${PATH}/${env.uid}`)
    .set(auth(key))
    .send({ config: { name: 'api-v3', github_repos: [{ owner: 'bad owner', repo: 'x' }] } });
  expect(expectProblem(bad, 400).detail).toContain('config.github_repos.0.owner');
  expect((await ctx.api.get(`${PATH}/${env.uid}`).set(auth(key))).body).toEqual(updated);
});

test('DELETE is 204; the environment is then 404 and gone from the list', async () => {
  const { key } = await ctx.newTeamKey();
  const keep = await post(key, { name: 'keep' });
  const doomed = await post(key, { name: 'doomed' });
  expect(await listUids(key)).toEqual([doomed.uid, keep.uid]);

  const res = await ctx.api.delete(`${PATH}/${doomed.uid}`).set(auth(key));
  expect(res.status).toBe(204);
  expect(res.text).toBe('');

  expect(expectProblem(await ctx.api.get(`${PATH}/${doomed.uid}`).set(auth(key)), 404).error_code).toBe(
    'resource_not_found',
  );
  expectProblem(
    await ctx.api
      .put(`${PATH}/${doomed.uid}`)
      .set(auth(key))
      .send({ config: { name: 'back' } }),
    404,
  );
  expectProblem(await ctx.api.delete(`${PATH}/${doomed.uid}`).set(auth(key)), 404);
  expect(await listUids(key)).toEqual([keep.uid]);
  expect(await listUids(key, '?sort_by=name')).toEqual([keep.uid]);
  expect((await ctx.api.get(`${PATH}/${keep.uid}`).set(auth(key))).status).toBe(200);
  // A run cannot use it any more either.
  const run = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', config: { environment_id: doomed.uid } });
  expectProblem(run, 404);
});

test("another team's environment is 404 on GET, PUT and DELETE and absent from its list", async () => {
  const owner = await ctx.newTeamKey();
  const stranger = await ctx.newTeamKey();
  const env = await post(owner.key, { name: 'private', setup_commands: ['true'] });
  const mine = await post(stranger.key, { name: 'mine' });

  for (const res of [
    await ctx.api.get(`${PATH}/${env.uid}`).set(auth(stranger.key)),
    await ctx.api
      .put(`${PATH}/${env.uid}`)
      .set(auth(stranger.key))
      .send({ config: { name: 'hijacked' } }),
    await ctx.api.delete(`${PATH}/${env.uid}`).set(auth(stranger.key)),
  ]) {
    const problem = expectProblem(res, 404);
    expect(problem.error_code).toBe('resource_not_found');
  }
  // Same answer as for an environment that never existed.
  const never = expectProblem(await ctx.api.get(`${PATH}/AAAAAAAAAAAAAAAAAAAAAA`).set(auth(stranger.key)), 404);
  expect(never.error_code).toBe('resource_not_found');
  expectProblem(await ctx.api.get(`${PATH}/not-a-uid`).set(auth(stranger.key)), 404);

  expect(await listUids(stranger.key)).toEqual([mine.uid]);
  expect(await listUids(stranger.key, '?sort_by=name')).toEqual([mine.uid]);
  // The owner's environment is untouched by the stranger's PUT and DELETE.
  const still = await ctx.api.get(`${PATH}/${env.uid}`).set(auth(owner.key));
  expect(still.status).toBe(200);
  expect(still.body).toEqual(env);
  expect(await listUids(owner.key)).toEqual([env.uid]);
  // And no key at all is 401.
  expect((await ctx.api.get(`${PATH}/${env.uid}`)).status).toBe(401);
});

const tooManyCommands = Array.from({ length: 51 }, (_, i) => `echo ${i}`);
test.each([
  ['a missing name', { config: { description: 'no name' } }, '`config.name`'],
  ['a blank name', { config: { name: '   ' } }, '`config.name`'],
  // The limit counts the name as sent, as the OpenAPI document says, not as stored (trimmed).
  ['a name over 200 characters with spaces around it', { config: { name: ` ${'n'.repeat(200)} ` } }, '`config.name`'],
  [
    'an IP address as an allowed domain',
    { config: { name: 'x', network: { allowed_domains: ['10.0.0.1'] } } },
    '`config.network',
  ],
  ['a missing config', {}, '`config`'],
  ['an unknown config field', { config: { name: 'x', colour: 'red' } }, '`config.colour`'],
  ['an unknown top-level field', { config: { name: 'x' }, colour: 'red' }, '`colour`'],
  ['an unknown repo field', { config: { name: 'x', github_repos: [{ owner: 'a', repo: 'b', ref: 'main' }] } }, 'ref'],
  [
    'a bad owner',
    { config: { name: 'x', github_repos: [{ owner: 'ac me', repo: 'web' }] } },
    '`config.github_repos.0.owner`',
  ],
  [
    'a bad repo',
    {
      config: {
        name: 'x',
        github_repos: [
          { owner: 'acme', repo: 'web' },
          { owner: 'acme', repo: '../etc' },
        ],
      },
    },
    '`config.github_repos.1.repo`',
  ],
  [
    'an owner of ".." (a path segment, not a name)',
    { config: { name: 'x', github_repos: [{ owner: '..', repo: 'web' }] } },
    '`config.github_repos.0.owner`',
  ],
  [
    'a repo of ".."',
    { config: { name: 'x', github_repos: [{ owner: 'acme', repo: '..' }] } },
    '`config.github_repos.0.repo`',
  ],
  [
    'a repo of "."',
    { config: { name: 'x', github_repos: [{ owner: 'acme', repo: '.' }] } },
    '`config.github_repos.0.repo`',
  ],
  [
    'duplicate repository names',
    {
      config: {
        name: 'x',
        github_repos: [
          { owner: 'acme', repo: 'web' },
          { owner: 'other', repo: 'web' },
        ],
      },
    },
    '`config.github_repos`',
  ],
  ['too many setup commands', { config: { name: 'x', setup_commands: tooManyCommands } }, '`config.setup_commands`'],
  ['a setup command that is not a string', { config: { name: 'x', setup_commands: [42] } }, 'setup_commands.0'],
  ['an image reference in capitals', { config: { name: 'x', docker_image: 'Python:3' } }, '`config.docker_image`'],
  ['an image with a broken digest', { config: { name: 'x', docker_image: 'python@sha256:12' } }, 'sha256'],
])('POST with %s is 400 naming the field and creates nothing', async (_what, body, field) => {
  const { key, team } = await ctx.newTeamKey();
  const res = await ctx.api.post(PATH).set(auth(key)).send(body);
  const problem = expectProblem(res, 400);
  expect(problem.error_code).toBe('invalid_request');
  expect(problem.detail).toContain(field);
  expect(res.headers.location).toBeUndefined();
  expect(await listUids(key)).toEqual([]);
  const rows = (await ctx.dataSource.query(
    `SELECT count(*)::int AS n FROM environments e JOIN teams t ON t.id = e.team_id WHERE t.name = $1`,
    [team],
  )) as { n: number }[];
  expect(rows[0]!.n).toBe(0);
});

test('runs filter by environment_id, and by empty-environment for runs without one', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'bare', github_repos: [] });
  const marker = uniqueName('env-filter');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const inEnv = await createRun(ctx, key, {
    prompt: `In the environment ${marker}`,
    config: { environment_id: envId },
  });
  const bare = await createRun(ctx, key, { prompt: `Without an environment ${marker}` });
  const done = await waitForState(ctx, key, inEnv, ['SUCCEEDED']);
  expect(done.agent_config).toMatchObject({ environment_id: envId });
  await waitForState(ctx, key, bare, ['SUCCEEDED']);

  const list = async (query: string) => {
    const res = await ctx.api.get(`/api/v1/agent/runs?${query}`).set(auth(key));
    expect(res.status).toBe(200);
    return (res.body as { runs: { run_id: string }[] }).runs.map((r) => r.run_id);
  };
  expect((await list('')).sort()).toEqual([inEnv, bare].sort());
  expect(await list(`environment_id=${envId}`)).toEqual([inEnv]);
  expect(await list('environment_id=empty-environment')).toEqual([bare]);
  expect(await list('environment_id=AAAAAAAAAAAAAAAAAAAAAA')).toEqual([]);

  // This team's environment has no skills (and no repositories): no agents.
  const agents = await ctx.api.get('/api/v1/agent').set(auth(key));
  expect(agents.status).toBe(200);
  expect(agents.body).toEqual({ agents: [] });
});

test('GET /agent lists the skills found in the repositories of the caller’s environments', async () => {
  const { key } = await ctx.newTeamKey();
  const stranger = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, { name: 'ops-env', github_repos: [{ owner: 'acme', repo: 'ops' }] });
  const marker = uniqueName('skills-list');
  ctx.model.script(marker, () => ({ text: 'looked around' }));
  const runId = await createRun(ctx, key, { prompt: `Look around ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const res = await ctx.api.get('/api/v1/agent').set(auth(key));
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    agents: [
      {
        name: 'deploy',
        variants: [
          expect.objectContaining({
            id: expect.any(String),
            description: 'Deploy the service to staging',
            base_prompt: expect.stringContaining('Run `make deploy` and watch the smoke test.'),
            source: { owner: 'acme', name: 'ops', skill_path: '.agents/skills/deploy/SKILL.md' },
            environments: [{ uid: envId, name: 'ops-env' }],
          }),
        ],
      },
    ],
  });
  const variant = (res.body as { agents: { variants: { id: string; base_prompt: string }[] }[] }).agents[0]!
    .variants[0]!;
  expect(variant.id).not.toBe('');
  // The base prompt is the skill's body, without its front matter.
  expect(variant.base_prompt).not.toContain('description:');

  // Filtered by repository.
  expect((await ctx.api.get('/api/v1/agent?repo=acme/ops').set(auth(key))).body.agents).toHaveLength(1);
  expect((await ctx.api.get('/api/v1/agent?repo=acme/other').set(auth(key))).body).toEqual({ agents: [] });
  expectProblem(await ctx.api.get('/api/v1/agent?colour=red').set(auth(key)), 400);

  // Another team sees none of it.
  expect((await ctx.api.get('/api/v1/agent').set(auth(stranger.key))).body).toEqual({ agents: [] });

  // Deleting the environment takes its skills out of the list.
  expect((await ctx.api.delete(`${PATH}/${envId}`).set(auth(key))).status).toBe(204);
  expect((await ctx.api.get('/api/v1/agent').set(auth(key))).body).toEqual({ agents: [] });
});

test(`${WARP_CLIENT}: agent.list honours what it sends: include_malformed_skills, refresh, repo, sort_by, team_uid`, async () => {
  const { key, team } = await ctx.newTeamKey();
  const other = await ctx.newTeamKey();
  const teamIds = (await ctx.dataSource.query(`SELECT id, name FROM teams WHERE name = ANY($1)`, [
    [team, other.team],
  ])) as { id: string; name: string }[];
  const teamId = teamIds.find((t) => t.name === team)!.id;
  const otherTeamId = teamIds.find((t) => t.name === other.team)!.id;
  const repos = [
    { owner: 'acme', repo: 'ops' },
    { owner: 'acme', repo: 'tools' },
  ];
  const envId = await createEnvironment(ctx, key, { name: 'both', github_repos: repos });
  const marker = uniqueName('skills-client');
  ctx.model.script(marker, () => ({ text: 'done' }));
  const looked = await createRun(ctx, key, { prompt: `Look around ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, looked, ['SUCCEEDED']);
  // The lint skill run last: `sort_by=last_run` puts it first.
  const linted = await createRun(ctx, key, {
    prompt: `Lint ${marker}`,
    skill: 'acme/tools:.agents/skills/lint/SKILL.md',
    config: { environment_id: envId },
  });
  await waitForState(ctx, key, linted, ['SUCCEEDED']);

  type Listed = { agents: { name: string; variants: { id: string; error?: string; description: string }[] }[] };
  const names = (r: WarpResult | undefined) => (r as { ok: Listed }).ok.agents.map((a) => a.name);
  const results = await warpClientCalls(ctx.baseUrl, key, [
    { call: 'agent.list' },
    { call: 'agent.list', kwargs: { include_malformed_skills: true } },
    { call: 'agent.list', kwargs: { include_malformed_skills: false, refresh: true } },
    { call: 'agent.list', kwargs: { repo: 'ACME/Tools' } },
    { call: 'agent.list', kwargs: { repo: 'acme' } },
    { call: 'agent.list', kwargs: { sort_by: 'name' } },
    { call: 'agent.list', kwargs: { sort_by: 'last_run' } },
    { call: 'agent.list', kwargs: { team_uid: teamId } },
    { call: 'agent.list', kwargs: { team_uid: otherTeamId } },
    { call: 'agent.runs.list', kwargs: { team_uid: otherTeamId } },
  ]);
  const [plain, malformed, refreshed, byRepo, badRepo, byName, byLastRun, own, theirs, theirRuns] = results;
  expect(names(plain)).toEqual(['deploy', 'lint']);
  expect(names(malformed)).toEqual(['broken', 'deploy', 'lint']);
  const broken = (malformed as { ok: Listed }).ok.agents[0]!.variants;
  expect(broken).toEqual([
    expect.objectContaining({
      id: 'acme/tools:.agents/skills/broken/SKILL.md',
      description: '',
      error: '.agents/skills/broken/SKILL.md has no `description` in its front matter',
    }),
  ]);
  // Only a malformed variant has an `error`.
  expect((plain as { ok: Listed }).ok.agents.flatMap((a) => a.variants).filter((v) => 'error' in v)).toEqual([]);
  expect(refreshed).toEqual(plain);
  expect(names(byRepo)).toEqual(['lint']);
  expect(badRepo).toMatchObject({ status: 400, body: { detail: expect.stringContaining('`repo`') } });
  expect(names(byName)).toEqual(['deploy', 'lint']);
  expect(names(byLastRun)).toEqual(['lint', 'deploy']);
  // `team_uid` (the `X-Warp-Team-Uid` header): the key's own team, or 404 as another team's things are.
  expect(own).toEqual(plain);
  expect([theirs, theirRuns]).toMatchObject([
    { error: 'NotFoundError', status: 404, body: { detail: expect.stringContaining('X-Warp-Team-Uid') } },
    { error: 'NotFoundError', status: 404 },
  ]);

  // oz-agent-sdk 0.15.0 sends the same parameters.
  const [older] = await warpClientCalls(
    ctx.baseUrl,
    key,
    [{ call: 'agent.list', kwargs: { include_malformed_skills: true, refresh: true, sort_by: 'last_run' } }],
    'oz',
  );
  expect(names(older)).toEqual(['lint', 'broken', 'deploy']);
});

test('a skill in two environments is one variant naming both; an environment that drops the repository drops its skills', async () => {
  const { key } = await ctx.newTeamKey();
  const repos = [{ owner: 'acme', repo: 'ops' }];
  const envA = await createEnvironment(ctx, key, { name: 'ops-a', github_repos: repos });
  const envB = await createEnvironment(ctx, key, { name: 'ops-b', github_repos: repos });
  const marker = uniqueName('skills-two');
  ctx.model.script(marker, () => ({ text: 'ok' }));
  for (const envId of [envA, envB]) {
    const runId = await createRun(ctx, key, { prompt: `Look ${marker}`, config: { environment_id: envId } });
    await waitForState(ctx, key, runId, ['SUCCEEDED']);
  }
  type Agents = { agents: { name: string; variants: { environments: { uid: string; name: string }[] }[] }[] };
  const byUid = (list: { uid: string; name: string }[]) => [...list].sort((x, y) => x.uid.localeCompare(y.uid));
  /** The environments of the one `deploy` variant (the team has no other skill). */
  const environmentsOfDeploy = async () => {
    const res = await ctx.api.get('/api/v1/agent').set(auth(key));
    expect(res.status).toBe(200);
    const { agents } = res.body as Agents;
    expect(agents.map((a) => a.name)).toEqual(['deploy']);
    expect(agents[0]!.variants).toHaveLength(1);
    return byUid(agents[0]!.variants[0]!.environments);
  };
  expect(await environmentsOfDeploy()).toEqual(
    byUid([
      { uid: envA, name: 'ops-a' },
      { uid: envB, name: 'ops-b' },
    ]),
  );

  // A rename shows at once; replacing the repositories takes the skills of the dropped one away.
  const put = (uid: string, config: Record<string, unknown>) =>
    ctx.api.put(`${PATH}/${uid}`).set(auth(key)).send({ config });
  expect((await put(envB, { name: 'ops-b2', github_repos: repos })).status).toBe(200);
  expect((await put(envA, { name: 'ops-a', github_repos: [] })).status).toBe(200);
  expect(await environmentsOfDeploy()).toEqual([{ uid: envB, name: 'ops-b2' }]);
  expect((await put(envB, { name: 'ops-b2', github_repos: [{ owner: 'acme', repo: 'other' }] })).status).toBe(200);
  expect((await ctx.api.get('/api/v1/agent').set(auth(key))).body).toEqual({ agents: [] });
});

test('IMAGE_ALLOWED_REGISTRIES: an image from another registry is 400 naming it, on create and on replace', async () => {
  const limited = await createTestContext({
    worker: false,
    env: { IMAGE_ALLOWED_REGISTRIES: 'ghcr.io,registry.internal:5000' },
  });
  try {
    const { key } = await limited.newTeamKey();
    const create = (docker_image: string) =>
      limited.api
        .post(PATH)
        .set(auth(key))
        .send({ config: { name: 'imaged', docker_image } });
    const refused = await create('python:3.12');
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toContain('`config.docker_image` comes from the registry docker.io');
    expect(refused.body.detail).toContain('IMAGE_ALLOWED_REGISTRIES (ghcr.io, registry.internal:5000)');
    expect((await create('registry.internal:5001/tools')).status).toBe(400);
    const made = await create('registry.internal:5000/tools:1.2');
    expect(made.status).toBe(201);
    expect(made.body.config.docker_image).toBe('registry.internal:5000/tools:1.2');
    const replace = await limited.api
      .put(`${PATH}/${made.body.uid}`)
      .set(auth(key))
      .send({ config: { name: 'imaged', docker_image: 'quay.io/acme/tools' } });
    expect(replace.status).toBe(400);
    const kept = await limited.api.get(`${PATH}/${made.body.uid}`).set(auth(key));
    expect(kept.body.config.docker_image).toBe('registry.internal:5000/tools:1.2');
  } finally {
    await limited.close();
  }
});
