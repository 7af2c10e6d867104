import { BUILT_IN_FORGES, forgeApiBase, forgeKindOf, parseRepositoryUrl } from '../../core/git-forges';
import { ForgeError, failureOfStatus } from '../../services/pull-requests/forges/forge-errors';
import { errorDetail } from '../../services/pull-requests/forges/forge-http';
import { forgeFor, UnknownForgeError } from '../../services/pull-requests/forges/forges';
import { pushFailureOf } from '../../services/pull-requests/forges/push-failures';
import { replayServer } from '../helpers/recorded-exchanges';

test('a repository URL: origin, host with port in lower case, owner (a GitLab group path), name without .git', () => {
  expect(parseRepositoryUrl('https://GitHub.com/octo-org/widgets.git')).toEqual({
    origin: 'https://github.com',
    host: 'github.com',
    owner: 'octo-org',
    name: 'widgets',
  });
  expect(parseRepositoryUrl('http://git.internal:3000/a/b/c')).toEqual({
    origin: 'http://git.internal:3000',
    host: 'git.internal:3000',
    owner: 'a/b',
    name: 'c',
  });
  for (const bad of [
    'git@github.com:o/r.git',
    'ssh://github.com/o/r',
    'https://user:pw@github.com/o/r',
    'https://github.com/o',
    'https://github.com/o/r?x=1',
    'https://github.com/o/../r',
    'not a url',
  ]) {
    expect(parseRepositoryUrl(bad)).toBeUndefined();
  }
});

test("a host's forge: GIT_FORGES over the built-ins, case-insensitive; none for an unknown host", () => {
  const forges = { ...BUILT_IN_FORGES, 'git.internal:3000': 'gitea' as const };
  expect(forgeKindOf(forges, 'GitHub.com')).toBe('github');
  expect(forgeKindOf(forges, 'gitlab.com')).toBe('gitlab');
  expect(forgeKindOf(forges, 'git.internal:3000')).toBe('gitea');
  expect(forgeKindOf(forges, 'git.internal')).toBeUndefined();
  expect(forgeKindOf(forges, 'constructor')).toBeUndefined();
  const unknown = parseRepositoryUrl('https://code.example.com/o/r')!;
  expect(() => forgeFor(forges, unknown, 't')).toThrow(UnknownForgeError);
  expect(() => forgeFor(forges, unknown, 't')).toThrow('add code.example.com=<github|gitlab|gitea> to GIT_FORGES');
});

test("each kind's API base: api.github.com for github.com, /api/v3 on GitHub Enterprise, /api/v4 GitLab, /api/v1 Gitea", () => {
  const at = (url: string) => parseRepositoryUrl(url)!;
  expect(forgeApiBase('github', at('https://github.com/o/r'))).toBe('https://api.github.com');
  expect(forgeApiBase('github', at('https://ghe.example.com/o/r'))).toBe('https://ghe.example.com/api/v3');
  expect(forgeApiBase('gitlab', at('https://gitlab.com/g/s/r'))).toBe('https://gitlab.com/api/v4');
  expect(forgeApiBase('gitea', at('http://127.0.0.1:3000/o/r'))).toBe('http://127.0.0.1:3000/api/v1');
});

test('error statuses map to failures; only an unavailable forge is retryable', () => {
  const none = new Headers();
  expect(failureOfStatus(401, 'Bad credentials', none)).toBe('unauthorized');
  expect(failureOfStatus(403, 'Forbidden', none)).toBe('forbidden');
  expect(failureOfStatus(403, 'API rate limit exceeded', new Headers({ 'x-ratelimit-remaining': '0' }))).toBe(
    'unavailable',
  );
  expect(failureOfStatus(403, 'secondary rate limit', new Headers({ 'retry-after': '60' }))).toBe('unavailable');
  expect(failureOfStatus(403, 'You are not allowed to push code to protected branches', none)).toBe('branch_protected');
  expect(failureOfStatus(422, 'Protected branch update failed', none)).toBe('branch_protected');
  expect(failureOfStatus(404, 'Not Found', none)).toBe('not_found');
  expect(failureOfStatus(409, '', none)).toBe('conflict');
  expect(failureOfStatus(422, 'A pull request already exists for o:b.', none)).toBe('conflict');
  expect(failureOfStatus(422, 'No commits between main and b', none)).toBe('invalid');
  expect(failureOfStatus(429, '', none)).toBe('unavailable');
  expect(failureOfStatus(500, '', none)).toBe('unavailable');
  expect(new ForgeError('unavailable', 'x').retryable).toBe(true);
  expect(new ForgeError('conflict', 'x').retryable).toBe(false);
});

test("the forge's own words from its error answers, nested as GitLab nests them, at most 300 characters", () => {
  expect(errorDetail('{"message":"Validation Failed","errors":[{"message":"A pull request already exists"}]}')).toBe(
    'Validation Failed; A pull request already exists',
  );
  expect(errorDetail('{"message":{"base":["is invalid"]}}')).toBe('is invalid');
  expect(errorDetail('<html>bad gateway</html>')).toBe('');
  expect(errorDetail(JSON.stringify({ message: 'x'.repeat(400) }))).toHaveLength(300);
});

test('a redirect to another origin is refused: the token goes to the configured forge only', async () => {
  const elsewhere = await replayServer([]);
  const forge = await replayServer([
    {
      request: { method: 'GET', url: '/api/v1/repos/o/r/pulls/1' },
      response: { status: 302, headers: { location: `${elsewhere.origin}/steal` } },
    },
  ]);
  try {
    const repository = parseRepositoryUrl(`${forge.origin}/o/r`)!;
    const gitea = forgeFor({ [repository.host]: 'gitea' }, repository, 'secret-token');
    const err = await gitea.read({ owner: 'o', name: 'r' }, 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForgeError);
    expect((err as ForgeError).failure).toBe('invalid');
    expect(elsewhere.received).toHaveLength(0);
  } finally {
    await Promise.all([forge.close(), elsewhere.close()]);
  }
});

test("a refused push's failure from git's words, as GitHub, GitLab and git print them (Gitea's: test/forge-gitea.test.ts)", () => {
  const cases: [string, string][] = [
    ['remote: error: GH006: Protected branch update failed for refs/heads/main.', 'branch_protected'],
    ['remote: GitLab: You are not allowed to push code to protected branches on this project.', 'branch_protected'],
    [' ! [rejected]        HEAD -> agent-runs/x (fetch first)\nerror: failed to push some refs', 'conflict'],
    [' ! [rejected]        HEAD -> agent-runs/x (non-fast-forward)', 'conflict'],
    [
      "remote: HTTP Basic: Access denied\nfatal: Authentication failed for 'https://gitlab.com/g/r.git/'",
      'unauthorized',
    ],
    [
      "remote: Permission to octo-org/widgets.git denied to bot.\nfatal: unable to access '…': The requested URL returned error: 403",
      'forbidden',
    ],
    ["remote: Repository not found.\nfatal: repository 'https://github.com/o/r.git/' not found", 'not_found'],
    [
      "fatal: unable to access 'https://git.example.com/o/r.git/': Could not resolve host: git.example.com",
      'unavailable',
    ],
    ["fatal: unable to access '…': The requested URL returned error: 502", 'unavailable'],
    ['error: something else entirely', 'invalid'],
  ];
  for (const [stderr, failure] of cases) expect([stderr, pushFailureOf(stderr)]).toEqual([stderr, failure]);
});
