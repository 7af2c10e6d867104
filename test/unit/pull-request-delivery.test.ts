import { parseGitCredential } from '../../core/git-credentials';
import { deliverySchema, mergeDelivery } from '../../core/schemas/delivery-schemas';
import { ForgeError } from '../../services/pull-requests/forges/forge-errors';
import type { Forge, PullRequest } from '../../services/pull-requests/forges/forge';
import {
  defuseReferences,
  openOrUpdatePullRequest,
  pullRequestBody,
} from '../../services/pull-requests/open-or-update';

test('git_credentials values are username:token@host, the host as URLs name it', () => {
  expect(parseGitCredential('bot:glpat-x@Git.Example.com:8443')).toEqual({
    username: 'bot',
    token: 'glpat-x',
    host: 'git.example.com:8443',
  });
  // The token may hold `:` and `@`; the host is after the last `@`.
  expect(parseGitCredential('bot:a:b@c@github.com')).toEqual({ username: 'bot', token: 'a:b@c', host: 'github.com' });
  for (const bad of [
    'token@github.com',
    ':t@github.com',
    'bot:@github.com',
    'bot:t',
    'bot:t@',
    'bot:t@host/path',
    'bot:t t@h',
  ]) {
    expect(parseGitCredential(bad)).toBeUndefined();
  }
});

test('branch names are checked as git checks them', () => {
  const ok = (branch: string) => deliverySchema.safeParse({ pull_request: { branch } }).success;
  expect(['agent-runs/x', 'feature/a-b_c.1', 'x']).toEqual(['agent-runs/x', 'feature/a-b_c.1', 'x'].filter(ok));
  for (const bad of ['a..b', 'a b', '/a', 'a/', 'a.lock', 'a/.b', '-a', 'a@{b', 'a~1', 'a:b', 'a//b', 'a.', '']) {
    expect([bad, ok(bad)]).toEqual([bad, false]);
  }
  expect(deliverySchema.safeParse({ pull_request: { unknown: 1 } }).success).toBe(false);
});

test("a run's delivery: its own fields win one by one, then its agent identity's, then its environment's", () => {
  expect(mergeDelivery(undefined, undefined)).toBeUndefined();
  expect(mergeDelivery(undefined, null, undefined)).toBeUndefined();
  expect(mergeDelivery({ pull_request: { draft: true } }, { pull_request: { base: 'dev', draft: false } })).toEqual({
    pull_request: { base: 'dev', draft: true },
  });
  expect(mergeDelivery(undefined, { pull_request: {} })).toEqual({ pull_request: {} });
  const own = { pull_request: { draft: true } };
  const identity = { pull_request: { draft: false, branch: 'identity-branch', title: 'From the identity' } };
  const environment = { pull_request: { branch: 'env-branch', base: 'dev', credential_secret_name: 'GIT' } };
  expect(mergeDelivery(own, identity, environment)).toEqual({
    pull_request: {
      draft: true,
      branch: 'identity-branch',
      title: 'From the identity',
      base: 'dev',
      credential_secret_name: 'GIT',
    },
  });
  // Only the identity asks for a pull request: the run delivers one.
  expect(mergeDelivery(undefined, identity, null)).toEqual(identity);
  expect(mergeDelivery({}, null, environment)).toEqual(environment);
  // The layers are not changed.
  expect(identity.pull_request).toEqual({ draft: false, branch: 'identity-branch', title: 'From the identity' });
});

test("the agent's text (a title it gives) closes, links and notifies nothing: mentions and issue references defused", () => {
  const title = defuseReferences('Fixes #12 for @alice (and octo-org/repo#3)');
  expect(title).not.toMatch(/#\d|@[a-z]/);
  expect(title.replace(/\u200b/g, '')).toBe('Fixes #12 for @alice (and octo-org/repo#3)');
  expect(defuseReferences('no # or @ here, C# and a@ b')).toBe('no # or @ here, C# and a@ b');
});

test("the body links the run and quotes the agent's answer with mentions and references defused", () => {
  const body = pullRequestBody({ runId: 'r1', link: 'https://x/sessions/s' }, 'Fixed it for @alice, see #12.\nDone.');
  expect(body).toContain('[run r1](https://x/sessions/s)');
  expect(body).toContain('> Fixed it for @\u200balice, see #\u200b12.\n> Done.');
  expect(pullRequestBody({ runId: 'r1', link: undefined }, 'x'.repeat(5000)).length).toBeLessThan(4200);
});

function fakeForge(existing: PullRequest[], openFails?: ForgeError): Forge & { opened: number } {
  const pr = (n: number): PullRequest => ({
    number: n,
    url: `u/${n}`,
    state: 'open',
    title: 't',
    body: 'b',
    head: 'h',
    base: 'main',
  });
  const forge = {
    kind: 'gitea' as const,
    opened: 0,
    findOpen: async () => existing[0],
    open: async () => {
      if (openFails) {
        existing.push(pr(7));
        throw openFails;
      }
      forge.opened++;
      return pr(1);
    },
    update: async (_r: unknown, found: PullRequest, changes: { title?: string; body?: string }) => ({
      ...found,
      ...changes,
    }),
    read: async () => pr(1),
  };
  return forge;
}

test('one pull request per branch: found and updated, opened, or found again after a clashing open', async () => {
  const repo = { owner: 'o', name: 'n' };
  const content = { head: 'h', base: 'main', title: 'T', body: 'B', draft: false };
  const opening = fakeForge([]);
  expect(await openOrUpdatePullRequest(opening, repo, content)).toMatchObject({ number: 1 });
  expect(opening.opened).toBe(1);
  const updating = fakeForge([
    { number: 3, url: 'u/3', state: 'open', title: 'old', body: 'old', head: 'h', base: 'main' },
  ]);
  expect(await openOrUpdatePullRequest(updating, repo, content)).toMatchObject({ number: 3, title: 'T', body: 'B' });
  expect(updating.opened).toBe(0);
  const racing = fakeForge([], new ForgeError('conflict', 'exists'));
  expect(await openOrUpdatePullRequest(racing, repo, content)).toMatchObject({ number: 7, title: 'T' });
  await expect(
    openOrUpdatePullRequest(fakeForge([], new ForgeError('invalid', 'no base')), repo, content),
  ).rejects.toThrow('no base');
});
