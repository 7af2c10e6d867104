import type { ForgeKind } from '../../../core/git-forges';

/** A pull request's state as the newest official client names it (`unknown` is the caller's, when it cannot ask). */
export type PullRequestState = 'open' | 'draft' | 'merged' | 'closed';

/** A pull request (GitLab: merge request), as every forge adapter answers it. */
export interface PullRequest {
  /** GitHub's and Gitea's `number`, GitLab's `iid`: what the forge's own pages show. */
  number: number;
  /** The page people open. */
  url: string;
  state: PullRequestState;
  /** As the forge shows it (with Gitea's `WIP:` or GitLab's `Draft:` on a draft). */
  title: string;
  body: string;
  head: string;
  base: string;
}

/** A repository by its path on the forge: `owner` may hold slashes on GitLab (groups and subgroups). */
export interface RepositoryPath {
  owner: string;
  name: string;
}

export interface OpenPullRequest {
  title: string;
  body: string;
  /** The branch it merges into. */
  base: string;
  /** The branch it merges, in the same repository. */
  head: string;
  draft: boolean;
}

/**
 * One forge's pull requests, for one API and one credential. Every call fails with a ForgeError
 * (forge-errors.ts): its `failure` says what happened, `retryable` whether trying again can help.
 */
export interface Forge {
  readonly kind: ForgeKind;
  /** The open (or draft) pull request whose head is `head` in the repository itself; undefined: none. */
  findOpen(repository: RepositoryPath, head: string): Promise<PullRequest | undefined>;
  open(repository: RepositoryPath, request: OpenPullRequest): Promise<PullRequest>;
  /** New title and/or body; a draft stays a draft. */
  update(
    repository: RepositoryPath,
    pullRequest: PullRequest,
    changes: { title?: string; body?: string },
  ): Promise<PullRequest>;
  read(repository: RepositoryPath, number: number): Promise<PullRequest>;
}

/** What an adapter is made with: its API's base URL (core/git-forges.ts `forgeApiBase`) and the token. */
export interface ForgeOptions {
  apiBase: string;
  /** Undefined or empty: every call fails `no_credential` before asking the forge. */
  token: string | undefined;
  /** Per request; past it the call fails `unavailable` (default 30 s). */
  timeoutMs?: number;
}
