/**
 * config.delivery.pull_request against the test run's real Gitea: the environment clones its
 * repositories from Gitea, the scripted model makes the agent change them, and the worker pushes
 * a branch and opens (then updates) one pull request per repository, from outside the sandbox.
 */
import { randomBytes } from 'node:crypto';
import type { SharedGitea } from './stack/on-demand-servers';
import { createEnvironment } from './helpers/environments';
import { createRepository, giteaApi, pushBranch, sharedGitea } from './helpers/gitea';
import { pullFiles, pullsOf as giteaPulls, teamWithGitCredential } from './helpers/gitea-delivery';
import { OPENS_PULL_REQUEST, startForgeProxy, type ForgeProxy } from './helpers/forge-proxy';
import { activityAttempts } from './helpers/activity-attempts';
import { recordReplayFixture } from './helpers/replay-fixtures';
import { auth, createRun, getRun, waitForState, transcript } from './helpers/runs';
import { busyboxFiles, pushImage, startRegistry, type LocalRegistry } from './helpers/image-registry';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

jest.setTimeout(600_000);

let ctx: TestContext;
let gitea: SharedGitea;
let proxy: ForgeProxy;
let host: string;
let registry: LocalRegistry;
beforeAll(async () => {
  gitea = await sharedGitea();
  proxy = await startForgeProxy(gitea.url);
  host = proxy.host;
  registry = await startRegistry();
  ctx = await createTestContext({
    env: {
      GIT_BASE_URL: `http://${host}`,
      GIT_FORGES: `${host}=gitea`,
      AGENT_MAX_STEPS: '50',
      IMAGE_INSECURE_REGISTRIES: registry.host,
      IMAGE_ALLOWED_REGISTRIES: registry.host,
    },
  });
});
afterAll(async () => {
  await ctx?.close();
  await proxy?.close();
  await registry?.stop();
});

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

const pullsOf = (repo: { owner: string; name: string }) => giteaPulls(gitea, repo);
const teamWithCredential = () => teamWithGitCredential(ctx, gitea, host);

/** The agent writes `files` (path: content) with run_command, then answers `answer`. */
function scriptWrites(marker: string, files: Record<string, string>, answer: string) {
  const command = Object.entries(files)
    .map(([file, content]) => `printf '%s' '${content}' > ${file}`)
    .join(' && ');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) return { text: '', toolCalls: [{ name: 'run_command', arguments: { command } }] };
    return { text: answer };
  });
}

test('a run that changes two cloned repositories opens two pull requests; a follow-up updates the same ones', async () => {
  const key = await teamWithCredential();
  const one = await createRepository(gitea, unique('deliver-one'));
  const two = await createRepository(gitea, unique('deliver-two'));
  const envId = await createEnvironment(ctx, key, {
    name: 'two repos',
    github_repos: [
      { owner: one.owner, repo: one.name },
      { owner: two.owner, repo: two.name },
    ],
  });
  const marker = uniqueName('pr');
  // Calls 1-2: the first turn; 3-4: the follow-up's.
  ctx.model.script(marker, (_req, call) => {
    const command =
      call === 1 ? `echo one > ${one.name}/a.txt && echo two > ${two.name}/b.txt` : `echo more > ${one.name}/c.txt`;
    if (call === 1 || call === 3) return { text: '', toolCalls: [{ name: 'run_command', arguments: { command } }] };
    return { text: call === 2 ? 'Added a.txt and b.txt.' : 'Added c.txt too.' };
  });
  const runId = await createRun(ctx, key, {
    prompt: `Add files ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  const branch = `agent-runs/${runId}`;
  for (const repo of [one, two]) {
    const pulls = await pullsOf(repo);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]).toMatchObject({ head: { ref: branch }, base: { ref: 'main' } });
    expect(pulls[0]!.body).toContain(runId);
    expect(pulls[0]!.body).toContain('Added a.txt and b.txt.');
    const commit = await giteaApi<{ commit: { author: { name: string; email: string } } }>(
      gitea,
      'GET',
      `/repos/${repo.owner}/${repo.name}/git/commits/${pulls[0]!.head.sha}`,
    );
    expect(commit.commit.author).toMatchObject({ name: 'agent-runs', email: 'agent-runs@localhost' });
  }
  const rows = (await ctx.dataSource.query(
    `SELECT repository, branch, base, head_sha, number, url, status FROM run_pull_requests WHERE run_id = $1 ORDER BY repository`,
    [runId],
  )) as { branch: string; head_sha: string; number: number; url: string; status: string }[];
  expect(rows).toHaveLength(2);
  expect(rows.every((r) => r.branch === branch && r.status === 'open' && r.url.startsWith(gitea.url))).toBe(true);
  // The run shows them as PULL_REQUEST artifacts, each opened with a `pull_request` event, and is found by their URLs.
  const run = await getRun(ctx, key, runId);
  const artifacts = (run.artifacts as { artifact_type: string; data: { url: string; branch: string } }[]).filter(
    (a) => a.artifact_type === 'PULL_REQUEST',
  );
  expect(artifacts.map((a) => [a.data.url, a.data.branch]).sort()).toEqual(rows.map((r) => [r.url, branch]).sort());
  const opened = (await transcript(ctx, runId)).filter((e) => e.kind === 'pull_request' && e.payload.opened);
  expect(opened).toHaveLength(2);
  const found = await ctx.api
    .get(`/api/v1/agent/run-by-external-reference?url=${encodeURIComponent(rows[0]!.url)}`)
    .set(auth(key));
  expect(found.body.run_id).toBe(runId);
  const firstHead = (await pullsOf(one))[0]!.head.sha;

  // A follow-up that changes more pushes to the same branch and updates the same pull request.
  const followup = await ctx.api
    .post(`/api/v1/agent/runs/${runId}/followups`)
    .set(auth(key))
    .send({ message: 'Add c.txt too.' });
  expect(followup.status).toBeLessThan(300);
  await waitFor(
    async () => (await pullsOf(one))[0]!,
    (pull) => pull.head.sha !== firstHead && pull.body.includes('Added c.txt too.'),
    'the pull request to be updated by the follow-up',
  );
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  expect(await pullsOf(one)).toHaveLength(1);
  expect(await pullFiles(gitea, one, (await pullsOf(one))[0]!)).toEqual(['a.txt', 'c.txt']);
  await recordReplayFixture(ctx, runId, 'pull-request-delivery');
});

test("a run on its environment's container image (busybox: no git in it) delivers its pull request as any run does", async () => {
  const key = await teamWithCredential();
  const repo = await createRepository(gitea, unique('deliver-image'));
  const reference = `${registry.host}/deliver/busy:${unique('tag')}`;
  await pushImage(reference, busyboxFiles('deliver'));
  const envId = await createEnvironment(ctx, key, {
    name: 'on an image',
    docker_image: reference,
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('image');
  scriptWrites(marker, { [`${repo.name}/from-image.txt`]: 'made on busybox' }, 'Wrote from-image.txt.');
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const pulls = await pullsOf(repo);
  expect(pulls).toHaveLength(1);
  expect(pulls[0]!.head.ref).toBe(`agent-runs/${runId}`);
  expect(await pullFiles(gitea, repo, pulls[0]!)).toEqual(['from-image.txt']);
});

test('the push credential never reaches the sandbox, the transcript or the pull request', async () => {
  const key = await teamWithCredential();
  const repo = await createRepository(gitea, unique('deliver-canary'));
  const envId = await createEnvironment(ctx, key, {
    name: 'canary',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('canary');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1) {
      const command = `env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; git -C ${repo.name} config -l; echo x > ${repo.name}/x.txt`;
      return { text: '', toolCalls: [{ name: 'run_command', arguments: { command } }] };
    }
    return { text: 'Looked around.' };
  });
  const runId = await createRun(ctx, key, {
    prompt: `Look ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const events = JSON.stringify(await transcript(ctx, runId));
  // The commands ran: the sandbox's environment and the repository's config are in the transcript.
  expect(events).toContain('PATH=');
  expect(events).toContain('remote.origin.url');
  const basic = Buffer.from(`${gitea.username}:${gitea.token}`).toString('base64');
  expect(events).not.toContain(gitea.token);
  expect(events).not.toContain(basic);
  const pulls = await pullsOf(repo);
  expect(pulls).toHaveLength(1);
  expect(JSON.stringify(pulls)).not.toContain(gitea.token);
});

test('a branch someone else changed is a typed conflict, and nothing is pushed over it', async () => {
  const key = await teamWithCredential();
  const repo = await createRepository(gitea, unique('deliver-conflict'));
  const envId = await createEnvironment(ctx, key, {
    name: 'conflict',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const branch = unique('taken');
  await pushBranch(gitea, repo, branch, { name: 'theirs.txt', content: 'someone else\n' });
  const before = await giteaApi<{ commit: { id: string } }>(
    gitea,
    'GET',
    `/repos/${repo.owner}/${repo.name}/branches/${branch}`,
  );
  const marker = uniqueName('conflict');
  scriptWrites(marker, { [`${repo.name}/mine.txt`]: 'mine' }, 'Added mine.txt.');
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: { branch } } },
  });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  expect(run.status_message).toMatchObject({ error_code: 'pull_request_conflict' });
  expect((run.status_message as { message: string }).message).toMatch(/nothing was pushed over them/);
  const after = await giteaApi<{ commit: { id: string } }>(
    gitea,
    'GET',
    `/repos/${repo.owner}/${repo.name}/branches/${branch}`,
  );
  expect(after.commit.id).toBe(before.commit.id);
  await recordReplayFixture(ctx, runId, 'pull-request-conflict');
});

test('without a credential the turn fails pull_request_no_credential, naming what to set', async () => {
  const { key } = await ctx.newTeamKey();
  const repo = await createRepository(gitea, unique('deliver-nocred'));
  const envId = await createEnvironment(ctx, key, {
    name: 'nocred',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('nocred');
  scriptWrites(marker, { [`${repo.name}/n.txt`]: 'n' }, 'Added n.txt.');
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  const run = await waitForState(ctx, key, runId, ['FAILED']);
  expect(run.status_message).toMatchObject({ error_code: 'pull_request_no_credential' });
  expect((run.status_message as { message: string }).message).toMatch(/git_credentials.*GIT_TOKEN_FOR_PUSH=true/);
  expect(await pullsOf(repo)).toHaveLength(0);
});

test('delivery without a cloned repository, or with a credential the team lacks, is 400 and creates nothing', async () => {
  const { key } = await ctx.newTeamKey();
  const bare = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', config: { delivery: { pull_request: {} } } });
  expect(bare.status).toBe(400);
  expect(bare.body.detail).toMatch(/config.delivery.pull_request.*environment_id/);
  const badBranch = await ctx.api
    .post('/api/v1/agent/runs')
    .set(auth(key))
    .send({ prompt: 'x', config: { delivery: { pull_request: { branch: 'a..b' } } } });
  expect(badBranch.status).toBe(400);
  expect(JSON.stringify(badBranch.body)).toMatch(/git branch name/);
});

test('a delivery retried after the forge opened the pull request but its answer was lost, and the pushed commit was not recorded, leaves one branch and one pull request', async () => {
  const key = await teamWithCredential();
  const repo = await createRepository(gitea, unique('deliver-retry'));
  const envId = await createEnvironment(ctx, key, {
    name: 'retry',
    github_repos: [{ owner: repo.owner, repo: repo.name }],
  });
  const marker = uniqueName('retry');
  scriptWrites(marker, { [`${repo.name}/r.txt`]: 'r' }, 'Added r.txt.');
  let release!: () => void;
  const held = proxy.arm(OPENS_PULL_REQUEST, new Promise<void>((resolve) => (release = resolve)));
  const runId = await createRun(ctx, key, {
    prompt: `Write ${marker}`,
    config: { environment_id: envId, delivery: { pull_request: {} } },
  });
  await held;
  // As if the worker had died between its push and recording it: the retry must make the same
  // commit, find the branch already at it, and find the pull request the lost answer opened.
  const pushed = (await ctx.dataSource.query(`SELECT head_sha FROM run_pull_requests WHERE run_id = $1`, [runId])) as {
    head_sha: string;
  }[];
  expect(pushed[0]?.head_sha).toMatch(/^[0-9a-f]{40}$/);
  await ctx.dataSource.query(`UPDATE run_pull_requests SET head_sha = NULL WHERE run_id = $1`, [runId]);
  release();
  await waitForState(ctx, key, runId, ['SUCCEEDED']);

  expect((await activityAttempts(ctx, runId)).some((line) => line.startsWith('deliverPullRequests#2'))).toBe(true);
  const pulls = await pullsOf(repo);
  expect(pulls).toHaveLength(1);
  expect(pulls[0]!.head.sha).toBe(pushed[0]!.head_sha);
  const branches = await giteaApi<{ name: string }[]>(gitea, 'GET', `/repos/${repo.owner}/${repo.name}/branches`);
  expect(branches.map((b) => b.name).sort()).toEqual([`agent-runs/${runId}`, 'main']);
  const row = (await ctx.dataSource.query(`SELECT head_sha, number FROM run_pull_requests WHERE run_id = $1`, [
    runId,
  ])) as {
    head_sha: string;
    number: number;
  }[];
  expect(row).toEqual([{ head_sha: pushed[0]!.head_sha, number: pulls[0]!.number }]);
  await recordReplayFixture(ctx, runId, 'pull-request-delivery-retry');
});
