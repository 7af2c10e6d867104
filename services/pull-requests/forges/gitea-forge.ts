import { z } from 'zod';
import type { Forge, ForgeOptions, PullRequest, RepositoryPath } from './forge';
import { forgeHttp } from './forge-http';

/** Gitea's default `[repository.pull-request] WORK_IN_PROGRESS_PREFIXES`: its drafts are titles that start so. */
const DRAFT_PREFIX = 'WIP: ';

const giteaPull = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.enum(['open', 'closed']),
  merged: z.boolean(),
  draft: z.boolean().optional(),
  title: z.string(),
  body: z.string().nullish(),
  head: z.object({ ref: z.string(), repo_id: z.number().optional() }),
  base: z.object({ ref: z.string(), repo_id: z.number().optional() }),
});
type GiteaPull = z.output<typeof giteaPull>;

function pullRequestOf(pull: GiteaPull): PullRequest {
  const draft = pull.draft ?? pull.title.startsWith(DRAFT_PREFIX.trim());
  const state = pull.merged ? 'merged' : pull.state === 'closed' ? 'closed' : draft ? 'draft' : 'open';
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

const PAGE_SIZE = 50;
/** Open pull requests looked through for a branch's (the list cannot filter by head). */
const MAX_PAGES = 20;

/** Gitea's (and Forgejo's) API v1: `/repos/{owner}/{repo}/pulls`, the token as `Authorization: token …`. */
export function giteaForge(options: ForgeOptions): Forge {
  const call = forgeHttp({
    title: `Gitea at ${options.apiBase}`,
    apiBase: options.apiBase,
    token: options.token,
    timeoutMs: options.timeoutMs,
    authorization: (token) => ({ authorization: `token ${token}` }),
  });
  const pulls = (r: RepositoryPath) => `/repos/${encodeURIComponent(r.owner)}/${encodeURIComponent(r.name)}/pulls`;
  return {
    kind: 'gitea',
    async findOpen(repository, head) {
      for (let page = 1; page <= MAX_PAGES; page++) {
        const query = { state: 'open', sort: 'recentupdate', page: String(page), limit: String(PAGE_SIZE) };
        const list = await call({ method: 'GET', path: pulls(repository), query, schema: z.array(giteaPull) });
        // Same repository only: a fork's branch of the same name is someone else's.
        const found = list.find((p) => p.head.ref === head && p.head.repo_id === p.base.repo_id);
        if (found) return pullRequestOf(found);
        if (list.length < PAGE_SIZE) return undefined;
      }
      return undefined;
    },
    async open(repository, request) {
      const title = request.draft ? `${DRAFT_PREFIX}${request.title}` : request.title;
      const body = { title, body: request.body, base: request.base, head: request.head };
      return pullRequestOf(await call({ method: 'POST', path: pulls(repository), body, schema: giteaPull }));
    },
    async update(repository, pullRequest, changes) {
      const body = {
        ...(changes.title === undefined ? {} : { title: keepDraft(pullRequest, changes.title) }),
        ...(changes.body === undefined ? {} : { body: changes.body }),
      };
      const path = `${pulls(repository)}/${pullRequest.number}`;
      return pullRequestOf(await call({ method: 'PATCH', path, body, schema: giteaPull }));
    },
    async read(repository, number) {
      return pullRequestOf(await call({ method: 'GET', path: `${pulls(repository)}/${number}`, schema: giteaPull }));
    },
  };
}

/** A draft's new title keeps the draft prefix (which is what makes it a draft on Gitea). */
function keepDraft(pullRequest: PullRequest, title: string): string {
  return pullRequest.state === 'draft' && !title.startsWith(DRAFT_PREFIX.trim()) ? `${DRAFT_PREFIX}${title}` : title;
}
