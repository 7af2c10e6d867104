import { z } from 'zod';
import type { Forge, ForgeOptions, PullRequest, RepositoryPath } from './forge';
import { forgeHttp } from './forge-http';

/** GitLab's drafts are merge requests whose title starts so (its create API has no draft field). */
const DRAFT_PREFIX = 'Draft: ';
const DRAFT_TITLE = /^\s*(\[draft\]|\(draft\)|draft:|draft\s-|\[wip\]|wip:)/i;

const gitlabMergeRequest = z.object({
  iid: z.number().int(),
  web_url: z.string(),
  state: z.enum(['opened', 'closed', 'locked', 'merged']),
  draft: z.boolean().optional(),
  title: z.string(),
  description: z.string().nullish(),
  source_branch: z.string(),
  target_branch: z.string(),
  source_project_id: z.number().int(),
  project_id: z.number().int(),
});
type GitlabMergeRequest = z.output<typeof gitlabMergeRequest>;

function pullRequestOf(mr: GitlabMergeRequest): PullRequest {
  const draft = mr.draft ?? DRAFT_TITLE.test(mr.title);
  // `locked`: GitLab is merging it right now.
  const state = mr.state === 'merged' ? 'merged' : mr.state === 'closed' ? 'closed' : draft ? 'draft' : 'open';
  return {
    number: mr.iid,
    url: mr.web_url,
    state,
    title: mr.title,
    body: mr.description ?? '',
    head: mr.source_branch,
    base: mr.target_branch,
  };
}

/**
 * GitLab's REST API v4: merge requests of `/projects/:id`, the id being the project's URL-encoded
 * path (`group%2Fsub%2Fproject`), the token in `PRIVATE-TOKEN`.
 */
export function gitlabForge(options: ForgeOptions): Forge {
  const call = forgeHttp({
    title: `GitLab at ${options.apiBase}`,
    apiBase: options.apiBase,
    token: options.token,
    timeoutMs: options.timeoutMs,
    authorization: (token) => ({ 'private-token': token }),
  });
  const mergeRequests = (r: RepositoryPath) => `/projects/${encodeURIComponent(`${r.owner}/${r.name}`)}/merge_requests`;
  return {
    kind: 'gitlab',
    async findOpen(repository, head) {
      const query = { state: 'opened', source_branch: head, per_page: '20' };
      const list = await call({
        method: 'GET',
        path: mergeRequests(repository),
        query,
        schema: z.array(gitlabMergeRequest),
      });
      // The project's own branch, not a fork's of the same name.
      const found = list.find((mr) => mr.source_branch === head && mr.source_project_id === mr.project_id);
      return found && pullRequestOf(found);
    },
    async open(repository, request) {
      const body = {
        source_branch: request.head,
        target_branch: request.base,
        title: request.draft ? `${DRAFT_PREFIX}${request.title}` : request.title,
        description: request.body,
      };
      const path = mergeRequests(repository);
      return pullRequestOf(await call({ method: 'POST', path, body, schema: gitlabMergeRequest }));
    },
    async update(repository, pullRequest, changes) {
      const body = {
        ...(changes.title === undefined ? {} : { title: keepDraft(pullRequest, changes.title) }),
        ...(changes.body === undefined ? {} : { description: changes.body }),
      };
      const path = `${mergeRequests(repository)}/${pullRequest.number}`;
      return pullRequestOf(await call({ method: 'PUT', path, body, schema: gitlabMergeRequest }));
    },
    async read(repository, number) {
      const path = `${mergeRequests(repository)}/${number}`;
      return pullRequestOf(await call({ method: 'GET', path, schema: gitlabMergeRequest }));
    },
  };
}

function keepDraft(pullRequest: PullRequest, title: string): string {
  return pullRequest.state === 'draft' && !DRAFT_TITLE.test(title) ? `${DRAFT_PREFIX}${title}` : title;
}
