/** Why a forge call failed, in the words a run's error shows. */
export const FORGE_FAILURES = [
  /** No token for the forge: nothing was asked. */
  'no_credential',
  /** The forge refused the token (revoked, expired, mistyped). */
  'unauthorized',
  /** The token is valid but may not do this (scope, role, SSO not authorized). */
  'forbidden',
  /** The branch is protected against this change. */
  'branch_protected',
  /** The request clashes with the forge's state (a pull request for the branch already exists, a stale update). */
  'conflict',
  /** No such repository or pull request (or the token may not see it). */
  'not_found',
  /** The forge refused the request's content (no commits between the branches, a missing base). */
  'invalid',
  /** The forge did not answer, answered 5xx or 429, or answered something that is not its API: try again later. */
  'unavailable',
] as const;
export type ForgeFailure = (typeof FORGE_FAILURES)[number];

/** A forge call that failed; the message names the forge and the call, never the token. */
export class ForgeError extends Error {
  override name = 'ForgeError';

  constructor(
    readonly failure: ForgeFailure,
    message: string,
    /** The forge's HTTP status, where it answered one. */
    readonly status?: number,
  ) {
    super(message);
  }

  /** Only an unreachable or overloaded forge may answer differently later. */
  get retryable(): boolean {
    return this.failure === 'unavailable';
  }
}

/** Words of the forges' answers that say a branch is protected (GitHub, GitLab, Gitea). */
const PROTECTED = /protected branch|branch is protected|protected from/i;
/** GitHub's 422 for a second pull request of the same head and base. */
const ALREADY_EXISTS = /already exists/i;

/** The failure an HTTP error status of a forge means; `detail` is the forge's own message. */
export function failureOfStatus(status: number, detail: string, headers: Headers): ForgeFailure {
  if (status === 429 || status >= 500) return 'unavailable';
  if (PROTECTED.test(detail)) return 'branch_protected';
  if (status === 401) return 'unauthorized';
  // GitHub answers 403 (not 429) to a token past its rate limit.
  if (status === 403 && (headers.get('x-ratelimit-remaining') === '0' || headers.has('retry-after'))) {
    return 'unavailable';
  }
  if (status === 403) return 'forbidden';
  if (status === 404 || status === 410) return 'not_found';
  if (status === 409 || status === 412 || ALREADY_EXISTS.test(detail)) return 'conflict';
  return 'invalid';
}
