/**
 * The GitHub adapter against recorded exchanges: request/response pairs written from GitHub's
 * published REST API description (docs.github.com/rest/pulls, API version 2022-11-28), replayed by
 * a local server, since the tests have no internet. What is checked is what the API requires of a
 * request: method, path, query, headers and body. Served as a GitHub Enterprise Server, whose API
 * is at `/api/v3` (github.com's is api.github.com: the unit test of forgeApiBase checks that).
 */
import { parseRepositoryUrl } from '../../core/git-forges';
import { ForgeError } from '../../services/pull-requests/forges/forge-errors';
import { forgeFor } from '../../services/pull-requests/forges/forges';
import { replayServer, type Exchange } from '../helpers/recorded-exchanges';

const TOKEN = 'ghp_recordedExchangeToken0000000000000';
const repo = { owner: 'octo-org', name: 'widgets' };

/** A pull request as GitHub answers one (the fields the adapter reads, and a few beside them). */
function githubPull(over: Record<string, unknown> = {}) {
  return {
    url: 'https://ghe.example.com/api/v3/repos/octo-org/widgets/pulls/7',
    id: 1_296_269,
    node_id: 'MDExOlB1bGxSZXF1ZXN0MQ==',
    html_url: 'https://ghe.example.com/octo-org/widgets/pull/7',
    number: 7,
    state: 'open',
    locked: false,
    title: 'Fix the widget',
    body: 'What the agent did',
    draft: false,
    merged_at: null,
    head: {
      label: 'octo-org:agent-runs/run-1',
      ref: 'agent-runs/run-1',
      sha: '6dcb09b5b57875f334f61aebed695e2e4193db5e',
    },
    base: { label: 'octo-org:main', ref: 'main', sha: '6dcb09b5b57875f334f61aebed695e2e4193db5f' },
    ...over,
  };
}

async function withGithub(
  exchanges: Exchange[],
  test: (forge: ReturnType<typeof forgeFor>, server: Awaited<ReturnType<typeof replayServer>>) => Promise<void>,
) {
  const server = await replayServer(exchanges);
  try {
    const repository = parseRepositoryUrl(`${server.origin}/${repo.owner}/${repo.name}`)!;
    await test(forgeFor({ [repository.host]: 'github' }, repository, TOKEN), server);
    expect(server.pending()).toBe(0);
  } finally {
    await server.close();
  }
}

/** What GitHub requires of every call: its media type, the API version, the token as a bearer token. */
function expectGithubHeaders(headers: Record<string, unknown>) {
  expect(headers).toMatchObject({
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    authorization: `Bearer ${TOKEN}`,
  });
  expect(headers['user-agent']).toBeTruthy(); // GitHub refuses requests without one
}

test('find by owner:branch, open (draft), update, read merged: the paths, queries, headers and bodies GitHub documents', async () => {
  const base = '/api/v3/repos/octo-org/widgets/pulls';
  await withGithub(
    [
      {
        request: { method: 'GET', url: `${base}?state=open&head=octo-org%3Aagent-runs%2Frun-1&per_page=10` },
        response: { status: 200, body: [] },
      },
      { request: { method: 'POST', url: base }, response: { status: 201, body: githubPull({ draft: true }) } },
      {
        request: { method: 'GET', url: `${base}?state=open&head=octo-org%3Aagent-runs%2Frun-1&per_page=10` },
        response: { status: 200, body: [githubPull({ draft: true })] },
      },
      {
        request: { method: 'PATCH', url: `${base}/7` },
        response: { status: 200, body: githubPull({ draft: true, title: 'Fix the widget (2)', body: 'Turn 2' }) },
      },
      {
        request: { method: 'GET', url: `${base}/7` },
        response: {
          status: 200,
          body: githubPull({ state: 'closed', merged_at: '2026-12-07T18:00:00Z', merged: true }),
        },
      },
      {
        request: { method: 'GET', url: `${base}/7` },
        response: { status: 200, body: githubPull({ state: 'closed' }) },
      },
    ],
    async (forge, server) => {
      expect(await forge.findOpen(repo, 'agent-runs/run-1')).toBeUndefined();
      const opened = await forge.open(repo, {
        title: 'Fix the widget',
        body: 'What the agent did',
        base: 'main',
        head: 'agent-runs/run-1',
        draft: true,
      });
      expect(opened).toEqual({
        number: 7,
        url: 'https://ghe.example.com/octo-org/widgets/pull/7',
        state: 'draft',
        title: 'Fix the widget',
        body: 'What the agent did',
        head: 'agent-runs/run-1',
        base: 'main',
      });
      expect(await forge.findOpen(repo, 'agent-runs/run-1')).toEqual(opened);
      expect(await forge.update(repo, opened, { title: 'Fix the widget (2)', body: 'Turn 2' })).toMatchObject({
        state: 'draft',
        title: 'Fix the widget (2)',
      });
      expect((await forge.read(repo, 7)).state).toBe('merged');
      expect((await forge.read(repo, 7)).state).toBe('closed');

      for (const request of server.received) expectGithubHeaders(request.headers);
      expect(server.received[1]!.headers['content-type']).toBe('application/json');
      expect(server.received[1]!.body).toEqual({
        title: 'Fix the widget',
        body: 'What the agent did',
        base: 'main',
        head: 'agent-runs/run-1',
        draft: true,
      });
      expect(server.received[3]!.body).toEqual({ title: 'Fix the widget (2)', body: 'Turn 2' });
    },
  );
});

test("GitHub's error answers are typed: 401, 403, a rate limit, 404, a second pull request (422), 502", async () => {
  const base = '/api/v3/repos/octo-org/widgets/pulls';
  const docs = 'https://docs.github.com/rest/pulls/pulls';
  await withGithub(
    [
      {
        request: { method: 'GET', url: `${base}/1` },
        response: {
          status: 401,
          body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' },
        },
      },
      {
        request: { method: 'GET', url: `${base}/1` },
        response: {
          status: 403,
          body: { message: 'Resource not accessible by personal access token', documentation_url: docs, status: '403' },
        },
      },
      {
        request: { method: 'GET', url: `${base}/1` },
        response: {
          status: 403,
          headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1765130400' },
          body: { message: 'API rate limit exceeded for user ID 1.', documentation_url: docs },
        },
      },
      {
        request: { method: 'GET', url: `${base}/1` },
        response: { status: 404, body: { message: 'Not Found', documentation_url: docs, status: '404' } },
      },
      {
        request: { method: 'POST', url: base },
        response: {
          status: 422,
          body: {
            message: 'Validation Failed',
            errors: [
              {
                resource: 'PullRequest',
                code: 'custom',
                message: 'A pull request already exists for octo-org:agent-runs/run-1.',
              },
            ],
            documentation_url: docs,
            status: '422',
          },
        },
      },
      { request: { method: 'GET', url: `${base}/1` }, response: { status: 502, body: { message: 'Server Error' } } },
    ],
    async (forge) => {
      const failure = (call: Promise<unknown>) =>
        call.then(
          () => undefined,
          (e: unknown) => (e instanceof ForgeError ? [e.failure, e.retryable] : e),
        );
      expect(await failure(forge.read(repo, 1))).toEqual(['unauthorized', false]);
      expect(await failure(forge.read(repo, 1))).toEqual(['forbidden', false]);
      expect(await failure(forge.read(repo, 1))).toEqual(['unavailable', true]);
      expect(await failure(forge.read(repo, 1))).toEqual(['not_found', false]);
      const request = { title: 't', body: '', base: 'main', head: 'agent-runs/run-1', draft: false };
      expect(await failure(forge.open(repo, request))).toEqual(['conflict', false]);
      expect(await failure(forge.read(repo, 1))).toEqual(['unavailable', true]);
    },
  );
});
