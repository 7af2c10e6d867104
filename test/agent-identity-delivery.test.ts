import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import { auth, createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/** An agent identity's `delivery`: stored and shown, checked as a run's, merged into its runs' config. */
const git = createGitHost();
git.addRepo('acme', 'widgets', { 'README.md': '# Widgets\n' });

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { GIT_BASE_URL: git.baseUrl } });
});
afterAll(async () => {
  await ctx?.close();
});

const PATH = '/api/v1/agent/identities';

async function identityOf(key: string, uid: string): Promise<Record<string, unknown>> {
  const res = await ctx.api.get(`${PATH}/${uid}`).set(auth(key));
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown>;
}

async function teamWithCredential(): Promise<string> {
  const { key } = await ctx.newTeamKey('personal', uniqueName('team'), 'admin');
  const res = await ctx.api
    .post('/api/v1/agent/secrets')
    .set(auth(key))
    .send({ name: 'forge', kind: 'git_credentials', value: 'bot:token@git.example.com' });
  expect(res.status).toBe(201);
  return key;
}

test('delivery is stored, shown and replaced; null clears it; a bad one is a 400 naming the field that changes nothing', async () => {
  const key = await teamWithCredential();
  const delivery = { pull_request: { branch: 'agents/docs', draft: true, credential_secret_name: 'forge' } };
  const created = await ctx.api
    .post(PATH)
    .set(auth(key))
    .send({ name: uniqueName('docs-bot'), delivery });
  expect(created.status).toBe(201);
  expect(created.body.delivery).toEqual(delivery);
  const uid = created.body.uid as string;
  expect((await identityOf(key, uid)).delivery).toEqual(delivery);
  expect((await ctx.api.get(PATH).set(auth(key))).body.agents[0].delivery).toEqual(delivery);

  // An update that leaves it out keeps it.
  const renamed = await ctx.api.put(`${PATH}/${uid}`).set(auth(key)).send({ description: 'Docs' });
  expect(renamed.body.delivery).toEqual(delivery);

  const refusals: [Record<string, unknown>, RegExp][] = [
    [{ pull_request: { branch: 'a..b' } }, /delivery\.pull_request\.branch.*git branch name/],
    [{ pull_request: { reviewers: ['x'] } }, /delivery\.pull_request/],
    [
      { pull_request: { credential_secret_name: 'missing' } },
      /`delivery\.pull_request\.credential_secret_name`.*missing/,
    ],
  ];
  for (const [bad, says] of refusals) {
    const put = await ctx.api.put(`${PATH}/${uid}`).set(auth(key)).send({ delivery: bad });
    expect([put.status, put.body.detail]).toEqual([400, expect.stringMatching(says)]);
    const post = await ctx.api
      .post(PATH)
      .set(auth(key))
      .send({ name: uniqueName('bad'), delivery: bad });
    expect([post.status, post.body.detail]).toEqual([400, expect.stringMatching(says)]);
  }
  const identity = await identityOf(key, uid);
  expect(identity).toMatchObject({ delivery, description: 'Docs' });
  expect((await ctx.api.get(PATH).set(auth(key))).body.agents).toHaveLength(1);

  const replaced = await ctx.api
    .put(`${PATH}/${uid}`)
    .set(auth(key))
    .send({ delivery: { pull_request: { title: 'Docs' } } });
  expect(replaced.body.delivery).toEqual({ pull_request: { title: 'Docs' } });
  const cleared = await ctx.api.put(`${PATH}/${uid}`).set(auth(key)).send({ delivery: null });
  expect(cleared.status).toBe(200);
  expect(cleared.body.delivery).toBeNull();
  expect((await identityOf(key, uid)).delivery).toBeNull();
});

test('a run of an agent delivers as the run says, then as its agent says, then as its environment says; without a repository it is refused', async () => {
  const key = await teamWithCredential();
  const identity = await ctx.api
    .post(PATH)
    .set(auth(key))
    .send({
      name: uniqueName('pr-bot'),
      delivery: {
        pull_request: { branch: 'agents/identity', title: 'From the agent', credential_secret_name: 'forge' },
      },
    });
  expect(identity.status).toBe(201);
  const agentUid = identity.body.uid as string;

  // The agent asks for a pull request, but the run clones nothing: the run's own 400.
  const bare = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', agent_identity_uid: agentUid });
  expect(bare.status).toBe(400);
  expect(bare.body.detail).toMatch(/`config.delivery.pull_request`: the run clones no repository.*environment_id/);
  expect(bare.body.detail).toContain(agentUid);
  expect((await ctx.api.get('/api/v1/agent/runs').set(auth(key))).body.runs).toEqual([]);

  const envId = await createEnvironment(ctx, key, {
    name: uniqueName('widgets'),
    github_repos: [{ owner: 'acme', repo: 'widgets' }],
    delivery: { pull_request: { base: 'dev', branch: 'agents/environment', draft: false } },
  });
  const marker = uniqueName('delivery-merge');
  ctx.model.script(marker, () => ({ text: 'Nothing to change.' }));
  const runId = await createRun(ctx, key, {
    prompt: `Look ${marker}`,
    agent_identity_uid: agentUid,
    config: { environment_id: envId, delivery: { pull_request: { draft: true } } },
  });
  const expected = {
    pull_request: {
      draft: true,
      branch: 'agents/identity',
      title: 'From the agent',
      credential_secret_name: 'forge',
      base: 'dev',
    },
  };
  expect((await getRun(ctx, key, runId)).agent_config).toMatchObject({ delivery: expected });
  const rows = (await ctx.dataSource.query(`SELECT config FROM runs WHERE run_id = $1`, [runId])) as {
    config: { delivery: unknown };
  }[];
  expect(rows[0]!.config.delivery).toEqual(expected);
  // The worker acts on it: this test's git host is no forge, so the delivery fails, typed.
  const ended = await waitForState(ctx, key, runId, ['FAILED']);
  expect(ended.status_message).toMatchObject({ error_code: 'pull_request_rejected' });
});
