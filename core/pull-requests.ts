/** A pull request's status as a `PULL_REQUEST` artifact shows it (the newest official client's values). */
export const PULL_REQUEST_STATUSES = ['open', 'draft', 'merged', 'closed', 'unknown'] as const;
export type PullRequestStatus = (typeof PULL_REQUEST_STATUSES)[number];
