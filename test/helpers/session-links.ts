import { expiresIn, signedQuery, urlSigningKeys } from '../../core/signed-urls';
import { resolveSecretsKeyring } from '../../infra/secrets-key';
import type { TestContext } from './test-context';

/**
 * The signed query (`expires=…&signature=…`) that opens the transcript page of `sessionId` on
 * `ctx`, signed with the service's own key as `session_link` is: for runs the API advertises no
 * link of yet (still QUEUED), and for links issued in the past (`expires` already gone).
 */
export function sessionLinkQuery(
  ctx: TestContext,
  sessionId: string,
  expires: number = expiresIn(ctx.config.sessionLinkTtlSeconds),
): string {
  return signedQuery(urlSigningKeys(resolveSecretsKeyring(ctx.config)), 'sessions', sessionId, expires);
}

/** A `session_link` as a path and query, for `ctx.api` (supertest) requests. */
export function sessionPagePath(link: unknown): string {
  const url = new URL(String(link));
  return url.pathname + url.search;
}
