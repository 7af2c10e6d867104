import { z } from 'zod';
import type { Forge, ForgeOptions, PullRequest, RepositoryPath } from './forge';
import { forgeHttp } from './forge-http';

/** The REST API version these calls are written against (GitHub's `X-GitHub-Api-Version`). */
export const GITHUB_API_VERSION = '2022-11-28';

const githubPull = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  draft: z.boolean().optional(),
  merged_at: z.string().nullish(),
  title: z.string(),
  body: z.string().nullish(),
  head: z.object({ ref: z.string() }),
  base: z.object({ ref: z.string() }),
});
type GithubPull = z.output<typeof githubPull>;

function pullRequestOf(pull: GithubPull): PullRequest {
  const state = pull.merged_at ? 'merged' : pull.state === 'closed' ? 'closed' : pull.draft ? 'draft' : 'open';
  return {
    number: pull.number,
    url: pull.html_url,
    state,
    title: pull.title,
    body: pull.body ?? '',
    head: pull.head.ref,
    base: pull.base.ref,
  };
}

/**
 * GitHub's REST API (github.com's api.github.com, a GitHub Enterprise Server's `/api/v3`):
 * `/repos/{owner}/{repo}/pulls`, the token as a bearer token.
 */
export function githubForge(options: ForgeOptions): Forge {
  const call = forgeHttp({
    title: `GitHub at ${options.apiBase}`,
    apiBase: options.apiBase,
    token: options.token,
    timeoutMs: options.timeoutMs,
    authorization: (token) => ({ authorization: `Bearer ${token}` }),
    headers: { accept: 'application/vnd.github+json', 'x-github-api-version': GITHUB_API_VERSION },
  });
  const pulls = (r: RepositoryPath) => `/repos/${encodeURIComponent(r.owner)}/${encodeURIComponent(r.name)}/pulls`;
  return {
    kind: 'github',
    async findOpen(repository, head) {
      // `head` as `owner:branch`: the repository's own branch, not a fork's of the same name.
      const query = { state: 'open', head: `${repository.owner}:${head}`, per_page: '10' };
      const list = await call({ method: 'GET', path: pulls(repository), query, schema: z.array(githubPull) });
      const found = list.find((p) => p.head.ref === head);
      return found && pullRequestOf(found);
    },
    async open(repository, request) {
      const { title, body, base, head, draft } = request;
      const sent = { title, body, base, head, draft };
      return pullRequestOf(await call({ method: 'POST', path: pulls(repository), body: sent, schema: githubPull }));
    },
    async update(repository, pullRequest, changes) {
      const path = `${pulls(repository)}/${pullRequest.number}`;
      return pullRequestOf(await call({ method: 'PATCH', path, body: changes, schema: githubPull }));
    },
    async read(repository, number) {
      return pullRequestOf(await call({ method: 'GET', path: `${pulls(repository)}/${number}`, schema: githubPull }));
    },
  };
}
