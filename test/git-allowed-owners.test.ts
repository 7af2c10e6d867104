import { randomBytes } from 'node:crypto';
import { assertGitOwnerAllowed, assertSkillOwnerAllowed } from '../services/skills/git-owners';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** GIT_ALLOWED_OWNERS: environments and skills may name only the operator's repository owners. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: { GIT_ALLOWED_OWNERS: 'acme', SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') },
    worker: false,
  });
});
afterAll(async () => {
  await ctx?.close();
});

const ENVIRONMENTS = '/api/v1/agent/environments';

interface Problem {
  status: number;
  error_code: string;
  detail: string;
}

function expectRefused(res: { status: number; headers: Record<string, string>; body: unknown }, repository: string) {
  expect(res.status).toBe(403);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const problem = res.body as Problem;
  expect(problem.error_code).toBe('not_authorized');
  expect(problem.detail).toContain(`repository ${repository} is not allowed`);
  expect(problem.detail).toContain('GIT_ALLOWED_OWNERS');
  return problem;
}

async function environmentCount(teamKey: string): Promise<number> {
  const res = await ctx.api.get(ENVIRONMENTS).set(auth(teamKey));
  expect(res.status).toBe(200);
  return (res.body as { environments: unknown[] }).environments.length;
}

async function runCount(team: string): Promise<number> {
  const [{ n }] = (await ctx.dataSource.query(
    `SELECT count(*)::int AS n FROM runs r JOIN teams t ON t.id = r.team_id WHERE t.name = $1`,
    [team],
  )) as [{ n: number }];
  return n;
}

test('an environment with a repository of another owner is 403 not_authorized naming it; nothing is created', async () => {
  const { key } = await ctx.newTeamKey();
  const refused = await ctx.api
    .post(ENVIRONMENTS)
    .set(auth(key))
    .send({ config: { name: 'web', github_repos: [{ owner: 'evil', repo: 'web' }] } });
  const problem = expectRefused(refused, 'evil/web');
  expect(problem.detail).toContain('`config.github_repos.0.owner`');
  expect(problem.detail).toContain('acme');

  const second = await ctx.api
    .post(ENVIRONMENTS)
    .set(auth(key))
    .send({
      config: {
        name: 'mixed',
        github_repos: [
          { owner: 'acme', repo: 'api' },
          { owner: 'acme-evil', repo: 'tools' },
        ],
      },
    });
  expect(expectRefused(second, 'acme-evil/tools').detail).toContain('`config.github_repos.1.owner`');
  expect(await environmentCount(key)).toBe(0);
});

test('owners compare case-insensitively: ACME/web is 201', async () => {
  const { key } = await ctx.newTeamKey();
  const res = await ctx.api
    .post(ENVIRONMENTS)
    .set(auth(key))
    .send({ config: { name: 'web', github_repos: [{ owner: 'ACME', repo: 'web' }] } });
  expect(res.status).toBe(201);
  expect(res.body.config.github_repos).toEqual([{ owner: 'ACME', repo: 'web' }]);
  expect(await environmentCount(key)).toBe(1);
});

test('updating an environment to another owner is 403 and leaves the stored environment as it was', async () => {
  const { key } = await ctx.newTeamKey();
  const created = await ctx.api
    .post(ENVIRONMENTS)
    .set(auth(key))
    .send({ config: { name: 'ops', github_repos: [{ owner: 'acme', repo: 'ops' }], setup_commands: ['make'] } });
  expect(created.status).toBe(201);
  const uid = created.body.uid as string;

  const refused = await ctx.api
    .put(`${ENVIRONMENTS}/${uid}`)
    .set(auth(key))
    .send({ config: { name: 'stolen', github_repos: [{ owner: 'evil', repo: 'ops' }] } });
  expectRefused(refused, 'evil/ops');

  const after = await ctx.api.get(`${ENVIRONMENTS}/${uid}`).set(auth(key));
  expect(after.status).toBe(200);
  expect(after.body).toEqual(created.body);

  const allowed = await ctx.api
    .put(`${ENVIRONMENTS}/${uid}`)
    .set(auth(key))
    .send({ config: { name: 'ops', github_repos: [{ owner: 'Acme', repo: 'ops2' }] } });
  expect(allowed.status).toBe(200);
  expect(allowed.body.config.github_repos).toEqual([{ owner: 'Acme', repo: 'ops2' }]);
});

test('a run whose skill is in another owner’s repository is 403 and no run is created', async () => {
  const { key, team } = await ctx.newTeamKey();
  const prompt = uniqueName('evil-skill');
  const bySkill = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send({ prompt, skill: 'evil/repo:x' });
  expect(expectRefused(bySkill, 'evil/repo').detail).toContain('`skill`');

  const bySpec = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .set('Idempotency-Key', uniqueName('idem'))
    .send({ prompt, config: { skill_spec: 'evil/repo:path/to/SKILL.md' } });
  expect(expectRefused(bySpec, 'evil/repo').detail).toContain('`config.skill_spec`');

  expect(await runCount(team)).toBe(0);
  const list = await ctx.api.get('/api/v1/agent/runs').set(auth(key));
  expect(list.body.runs).toEqual([]);
});

test('bundled skills and skills of an allowed owner (any case) are accepted', async () => {
  const { key, team } = await ctx.newTeamKey();
  const bundled = await createRun(ctx, key, { prompt: 'use the API', skill: 'agent-runs/bundled:svc-platform' });
  expect((await getRun(ctx, key, bundled)).agent_config).toMatchObject({
    skill_spec: 'agent-runs/bundled:svc-platform',
  });
  const owned = await createRun(ctx, key, { prompt: 'deploy', config: { skill_spec: 'ACME/ops:deploy' } });
  expect((await getRun(ctx, key, owned)).agent_config).toMatchObject({ skill_spec: 'ACME/ops:deploy' });
  expect(await runCount(team)).toBe(2);
});

test('unset, every owner is allowed; an empty list allows none', () => {
  expect(() => assertGitOwnerAllowed(undefined, { owner: 'anyone', repo: 'x' }, 'f')).not.toThrow();
  expect(() => assertSkillOwnerAllowed(undefined, 'anyone/x:y', 'skill')).not.toThrow();
  expect(() => assertGitOwnerAllowed([], { owner: 'acme', repo: 'x' }, 'f')).toThrow(/allows no repository owner/);
  expect(() => assertSkillOwnerAllowed([], 'agent-runs/bundled:svc-platform', 'skill')).not.toThrow();
});

test('an environment saved before GIT_ALLOWED_OWNERS was set is held to it when a worker provisions it', async () => {
  // The same database, an operator who had not restricted owners yet.
  const before = await createTestContext({ worker: false });
  const key = await before.newTeamKey();
  const saved = await before.api
    .post(ENVIRONMENTS)
    .set(auth(key.key))
    .send({ config: { name: 'old', github_repos: [{ owner: 'evil', repo: 'tools' }] } });
  await before.close();
  expect(saved.status).toBe(201);

  await ctx.startWorker();
  try {
    const runId = await createRun(ctx, key.key, {
      prompt: `old env ${uniqueName('owners')}`,
      config: { environment_id: (saved.body as { uid: string }).uid },
    });
    const run = await waitForState(ctx, key.key, runId, ['FAILED']);
    expect(run.status_message).toMatchObject({ error_code: 'not_authorized' });
    expect((run.status_message as { message: string }).message).toContain('evil/tools is not allowed');
  } finally {
    await ctx.stopWorker();
  }
});
