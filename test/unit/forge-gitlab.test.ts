/**
 * The GitLab adapter against recorded exchanges: request/response pairs written from GitLab's
 * published REST API v4 description (docs.gitlab.com/api/merge_requests), replayed by a local
 * server, since the tests have no internet. What is checked is what the API requires of a
 * request: method, path (the project as its URL-encoded path), query, headers and body.
 */
import { parseRepositoryUrl } from '../../core/git-forges';
import { ForgeError } from '../../services/pull-requests/forges/forge-errors';
import { forgeFor } from '../../services/pull-requests/forges/forges';
import { replayServer, type Exchange } from '../helpers/recorded-exchanges';

const TOKEN = 'glpat-recordedExchangeToken00';
/** A project in a subgroup: its id in the API is `octo-group%2Fplatform%2Fwidgets`. */
const repo = { owner: 'octo-group/platform', name: 'widgets' };
const MERGE_REQUESTS = '/api/v4/projects/octo-group%2Fplatform%2Fwidgets/merge_requests';

/** A merge request as GitLab answers one (the fields the adapter reads, and a few beside them). */
function mergeRequest(over: Record<string, unknown> = {}) {
  return {
    id: 84,
    iid: 3,
    project_id: 42,
    title: 'Draft: Fix the widget',
    description: 'What the agent did',
    state: 'opened',
    draft: true,
    work_in_progress: true,
    source_branch: 'agent-runs/run-1',
    target_branch: 'main',
    source_project_id: 42,
    target_project_id: 42,
    merge_status: 'can_be_merged',
    web_url: 'https://gitlab.example.com/octo-group/platform/widgets/-/merge_requests/3',
    ...over,
  };
}

async function withGitlab(
  exchanges: Exchange[],
  test: (forge: ReturnType<typeof forgeFor>, server: Awaited<ReturnType<typeof replayServer>>) => Promise<void>,
) {
  const server = await replayServer(exchanges);
  try {
    const repository = parseRepositoryUrl(`${server.origin}/${repo.owner}/${repo.name}.git`)!;
    expect(repository).toMatchObject(repo);
    await test(forgeFor({ [repository.host]: 'gitlab' }, repository, TOKEN), server);
    expect(server.pending()).toBe(0);
  } finally {
    await server.close();
  }
}

test('find by source branch, open a draft, update it (it stays a draft), read merged: as GitLab documents them', async () => {
  const find = `${MERGE_REQUESTS}?state=opened&source_branch=agent-runs%2Frun-1&per_page=20`;
  await withGitlab(
    [
      // A fork's merge request from a branch of the same name is not this run's.
      {
        request: { method: 'GET', url: find },
        response: { status: 200, body: [mergeRequest({ iid: 2, source_project_id: 99 })] },
      },
      { request: { method: 'POST', url: MERGE_REQUESTS }, response: { status: 201, body: mergeRequest() } },
      { request: { method: 'GET', url: find }, response: { status: 200, body: [mergeRequest()] } },
      {
        request: { method: 'PUT', url: `${MERGE_REQUESTS}/3` },
        response: { status: 200, body: mergeRequest({ title: 'Draft: Fix it (2)', description: 'Turn 2' }) },
      },
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/3` },
        response: { status: 200, body: mergeRequest({ state: 'merged', draft: false, title: 'Fix it' }) },
      },
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/3` },
        response: { status: 200, body: mergeRequest({ state: 'locked', draft: false, title: 'Fix it' }) },
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
        number: 3,
        url: 'https://gitlab.example.com/octo-group/platform/widgets/-/merge_requests/3',
        state: 'draft',
        title: 'Draft: Fix the widget',
        body: 'What the agent did',
        head: 'agent-runs/run-1',
        base: 'main',
      });
      expect(await forge.findOpen(repo, 'agent-runs/run-1')).toEqual(opened);
      expect(await forge.update(repo, opened, { title: 'Fix it (2)', body: 'Turn 2' })).toMatchObject({
        state: 'draft',
        body: 'Turn 2',
      });
      expect((await forge.read(repo, 3)).state).toBe('merged');
      expect((await forge.read(repo, 3)).state).toBe('open'); // `locked`: being merged

      for (const request of server.received) {
        expect(request.headers['private-token']).toBe(TOKEN);
        expect(request.headers.authorization).toBeUndefined();
      }
      expect(server.received[1]!.headers['content-type']).toBe('application/json');
      // GitLab's create call has no draft field: a draft is a title that starts `Draft:`.
      expect(server.received[1]!.body).toEqual({
        source_branch: 'agent-runs/run-1',
        target_branch: 'main',
        title: 'Draft: Fix the widget',
        description: 'What the agent did',
      });
      expect(server.received[3]!.body).toEqual({ title: 'Draft: Fix it (2)', description: 'Turn 2' });
    },
  );
});

test("GitLab's error answers are typed: 401, 403, 404, a second merge request (409), 503", async () => {
  await withGitlab(
    [
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/1` },
        response: { status: 401, body: { message: '401 Unauthorized' } },
      },
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/1` },
        response: { status: 403, body: { message: '403 Forbidden' } },
      },
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/1` },
        response: { status: 404, body: { message: '404 Project Not Found' } },
      },
      {
        request: { method: 'POST', url: MERGE_REQUESTS },
        response: {
          status: 409,
          body: { message: ['Another open merge request already exists for this source branch: !3'] },
        },
      },
      {
        request: { method: 'GET', url: `${MERGE_REQUESTS}/1` },
        response: { status: 503, body: { message: 'GitLab is not responding' } },
      },
    ],
    async (forge) => {
      const failure = (call: Promise<unknown>) =>
        call.then(
          () => undefined,
          (e: unknown) => (e instanceof ForgeError ? [e.failure, e.retryable, e.message] : e),
        );
      expect(await failure(forge.read(repo, 1))).toEqual([
        'unauthorized',
        false,
        expect.stringContaining('401 Unauthorized'),
      ]);
      expect(await failure(forge.read(repo, 1))).toEqual(['forbidden', false, expect.any(String)]);
      expect(await failure(forge.read(repo, 1))).toEqual([
        'not_found',
        false,
        expect.stringContaining('404 Project Not Found'),
      ]);
      const request = { title: 't', body: '', base: 'main', head: 'agent-runs/run-1', draft: false };
      expect(await failure(forge.open(repo, request))).toEqual([
        'conflict',
        false,
        expect.stringContaining('already exists for this source branch'),
      ]);
      expect(await failure(forge.read(repo, 1))).toEqual(['unavailable', true, expect.any(String)]);
    },
  );
});
