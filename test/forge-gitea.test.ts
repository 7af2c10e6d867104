/**
 * The Gitea adapter against a real Gitea (the test run's, test/stack/on-demand-servers.ts): the
 * same API v1 Forgejo speaks. Branches are pushed with git over HTTP, as the worker will.
 */
import { randomBytes } from 'node:crypto';
import { parseRepositoryUrl } from '../core/git-forges';
import { ForgeError, type ForgeFailure } from '../services/pull-requests/forges/forge-errors';
import { forgeFor } from '../services/pull-requests/forges/forges';
import { pushFailureOf } from '../services/pull-requests/forges/push-failures';
import { freePort } from './helpers/free-port';
import { createRepository, giteaApi, pushBranch, sharedGitea } from './helpers/gitea';

jest.setTimeout(600_000);

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

/** The adapter for a repository of the run's Gitea, chosen as the service chooses it: GIT_FORGES by host. */
async function giteaFor(token: string | undefined) {
  const gitea = await sharedGitea();
  const repository = parseRepositoryUrl(`${gitea.url}/${gitea.username}/any`)!;
  return forgeFor({ [repository.host]: 'gitea' }, repository, token);
}

async function failureOf(
  call: Promise<unknown>,
): Promise<{ failure: ForgeFailure; retryable: boolean; message: string }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ForgeError)) throw new Error(`expected a ForgeError, got ${String(err)}`);
  return { failure: err.failure, retryable: err.retryable, message: err.message };
}

test('opens a pull request for a pushed branch, finds it again by branch, updates it, reads it closed', async () => {
  const gitea = await sharedGitea();
  const forge = await giteaFor(gitea.token);
  const repository = await createRepository(gitea, unique('deliver'));
  const branch = 'agent-runs/run-1';
  await pushBranch(gitea, repository, branch, { name: 'change.txt', content: 'the agent was here\n' });

  expect(await forge.findOpen(repository, branch)).toBeUndefined();
  const opened = await forge.open(repository, {
    title: 'Fix it',
    body: 'Run: link',
    base: 'main',
    head: branch,
    draft: false,
  });
  expect(opened).toMatchObject({ state: 'open', title: 'Fix it', body: 'Run: link', head: branch, base: 'main' });
  expect(opened.url).toBe(`${gitea.url}/${repository.owner}/${repository.name}/pulls/${opened.number}`);

  // A retry finds the same pull request by its branch; a second open is a conflict, never a second PR.
  expect(await forge.findOpen(repository, branch)).toEqual(opened);
  const again = await failureOf(
    forge.open(repository, { title: 'Fix it', body: '', base: 'main', head: branch, draft: false }),
  );
  expect(again).toMatchObject({ failure: 'conflict', retryable: false });
  const all = await giteaApi<unknown[]>(gitea, 'GET', `/repos/${repository.owner}/${repository.name}/pulls?state=all`);
  expect(all).toHaveLength(1);

  const updated = await forge.update(repository, opened, { title: 'Fix it (2 turns)', body: 'Run: link\nTurn 2' });
  expect(updated).toMatchObject({ number: opened.number, title: 'Fix it (2 turns)', body: 'Run: link\nTurn 2' });
  expect(await forge.read(repository, opened.number)).toEqual(updated);

  await giteaApi(gitea, 'PATCH', `/repos/${repository.owner}/${repository.name}/pulls/${opened.number}`, {
    state: 'closed',
  });
  expect((await forge.read(repository, opened.number)).state).toBe('closed');
  expect(await forge.findOpen(repository, branch)).toBeUndefined();
});

test('a draft stays a draft when its title changes; a merged pull request reads merged', async () => {
  const gitea = await sharedGitea();
  const forge = await giteaFor(gitea.token);
  const repository = await createRepository(gitea, unique('draft'));
  await pushBranch(gitea, repository, 'agent-runs/draft', { name: 'draft.txt', content: 'draft\n' });
  const draft = await forge.open(repository, {
    title: 'Try',
    body: '',
    base: 'main',
    head: 'agent-runs/draft',
    draft: true,
  });
  expect(draft).toMatchObject({ state: 'draft', title: 'WIP: Try' });
  expect(await forge.findOpen(repository, 'agent-runs/draft')).toMatchObject({ number: draft.number, state: 'draft' });
  expect(await forge.update(repository, draft, { title: 'Try harder' })).toMatchObject({
    state: 'draft',
    title: 'WIP: Try harder',
  });

  // Out of draft by its title, as people do it on Gitea.
  await giteaApi(gitea, 'PATCH', `/repos/${repository.owner}/${repository.name}/pulls/${draft.number}`, {
    title: 'Ready',
  });
  expect((await forge.read(repository, draft.number)).state).toBe('open');
  await mergeWhenMergeable(gitea, repository, draft.number);
  expect((await forge.read(repository, draft.number)).state).toBe('merged');
});

/** Gitea checks a new pull request's mergeability in the background; until then a merge is refused. */
async function mergeWhenMergeable(
  gitea: Awaited<ReturnType<typeof sharedGitea>>,
  repository: { owner: string; name: string },
  number: number,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const merged = await giteaApi(
      gitea,
      'POST',
      `/repos/${repository.owner}/${repository.name}/pulls/${number}/merge`,
      {
        Do: 'merge',
      },
    ).then(
      () => true,
      (err: unknown) => {
        if (Date.now() > deadline) throw err;
        return false;
      },
    );
    if (merged) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test("a token that may read but not change another's pull request is forbidden", async () => {
  const gitea = await sharedGitea();
  const repository = await createRepository(gitea, unique('others'));
  await pushBranch(gitea, repository, 'agent-runs/run-4', { name: 'd.txt', content: 'd\n' });
  const opened = await (
    await giteaFor(gitea.token)
  ).open(repository, {
    title: 'Theirs',
    body: '',
    base: 'main',
    head: 'agent-runs/run-4',
    draft: false,
  });
  const outsider = await giteaUserToken(gitea, unique('outsider'));
  const failure = await failureOf((await giteaFor(outsider)).update(repository, opened, { title: 'Mine now' }));
  expect(failure).toMatchObject({ failure: 'forbidden', retryable: false });
  expect((await (await giteaFor(gitea.token)).read(repository, opened.number)).title).toBe('Theirs');
});

/** A new user's access token (scopes to write repositories, issues and pull requests: Gitea checks the repository's permissions). */
async function giteaUserToken(gitea: Awaited<ReturnType<typeof sharedGitea>>, username: string): Promise<string> {
  const password = randomBytes(12).toString('hex');
  await giteaApi(gitea, 'POST', '/admin/users', {
    username,
    email: `${username}@example.test`,
    password,
    must_change_password: false,
  });
  const response = await fetch(`${gitea.url}/api/v1/users/${username}/tokens`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: 'forge-test', scopes: ['write:repository', 'write:issue'] }),
  });
  if (!response.ok) throw new Error(`token for ${username}: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { sha1: string }).sha1;
}

test('failures are typed: a bad token, a missing repository, no token, a forge that is down', async () => {
  const gitea = await sharedGitea();
  const repository = await createRepository(gitea, unique('failures'));

  const badToken = await failureOf((await giteaFor('0'.repeat(40))).findOpen(repository, 'x'));
  expect(badToken).toMatchObject({ failure: 'unauthorized', retryable: false });
  expect(badToken.message).not.toContain('0'.repeat(40));

  const forge = await giteaFor(gitea.token);
  const missing = await failureOf(forge.read({ owner: gitea.username, name: unique('nowhere') }, 1));
  expect(missing).toMatchObject({ failure: 'not_found', retryable: false });
  expect(await failureOf(forge.read(repository, 999))).toMatchObject({ failure: 'not_found' });
  const noBase = await failureOf(
    forge.open(repository, { title: 't', body: '', base: 'main', head: 'no-such-branch', draft: false }),
  );
  expect(noBase.retryable).toBe(false);

  expect(await failureOf((await giteaFor(undefined)).findOpen(repository, 'x'))).toMatchObject({
    failure: 'no_credential',
    retryable: false,
  });

  const down = parseRepositoryUrl(`http://127.0.0.1:${await freePort()}/${repository.owner}/${repository.name}`)!;
  const nobodyThere = forgeFor({ [down.host]: 'gitea' }, down, gitea.token);
  expect(await failureOf(nobodyThere.findOpen(repository, 'x'))).toMatchObject({
    failure: 'unavailable',
    retryable: true,
  });
});

/** git's stderr of a push the forge refused. */
async function refusedPush(push: Promise<void>): Promise<string> {
  const err = await push.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!err) throw new Error('the push was accepted');
  return (err as { stderr?: string }).stderr ?? String(err);
}

test("a refused push is typed from git's words: a protected branch, someone else's commits on the branch, a bad token", async () => {
  const gitea = await sharedGitea();
  const repository = await createRepository(gitea, unique('pushes'));
  await giteaApi(gitea, 'POST', `/repos/${repository.owner}/${repository.name}/branch_protections`, {
    rule_name: 'main',
    enable_push: false,
  });
  const toMain = await refusedPush(
    pushBranch(gitea, repository, 'work', { name: 'a.txt', content: 'a\n' }, { to: 'main' }),
  );
  expect(pushFailureOf(toMain)).toBe('branch_protected');

  await pushBranch(gitea, repository, 'agent-runs/run-2', { name: 'b.txt', content: 'theirs\n' });
  const overTheirs = await refusedPush(
    pushBranch(gitea, repository, 'agent-runs/run-2', { name: 'b.txt', content: 'ours\n' }),
  );
  expect(pushFailureOf(overTheirs)).toBe('conflict');

  const badToken = await refusedPush(
    pushBranch(gitea, repository, 'agent-runs/run-3', { name: 'c.txt', content: 'c\n' }, { token: '0'.repeat(40) }),
  );
  expect(pushFailureOf(badToken)).toBe('unauthorized');
});
