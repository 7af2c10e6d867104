import type { Middleware } from 'koa';
import type { DataSource } from 'typeorm';
import { authenticateKey, looksLikeKey, type AuthenticatedPrincipal } from '../../db/api-key-reads';
import type { ClientAddressLimit } from './client-address-limit';
import { ApiError, notFound } from '../../core/api-error';
import { assertAdmin } from '../../services/team-roles';
import type { KeyUseRecorder } from '../../services/keys/key-use-recorder';

const challenge = { 'WWW-Authenticate': 'Bearer' };

function unauthenticated(detail: string): ApiError {
  return new ApiError('authentication_required', detail, { headers: challenge });
}

/** What a refused key that expired is told: when, and what to do. */
export function expiredKeyDetail(expiredAt: Date, replaced: boolean): string {
  return replaced
    ? `The API key expired at ${expiredAt.toISOString()}: it was rotated and its grace period has ended. Use the key that replaced it.`
    : `The API key expired at ${expiredAt.toISOString()}. Ask an operator for a new one (npm run keys -- create or rotate).`;
}

/**
 * Resolves `Authorization: Bearer <key>` to a principal in `ctx.state.principal`, before anything
 * reads the request's body, and notes the key's use (`uses`, off the request's path). Each failure
 * counts against the client's address (`limit`); past it, a request without a well-formed key is
 * refused without a lookup, and every failure is a 429.
 */
export function authenticate(
  dataSource: DataSource,
  limit?: ClientAddressLimit,
  uses?: Pick<KeyUseRecorder, 'note'>,
): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const key = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    const fail = async (detail: string): Promise<never> => {
      await limit?.take(ctx.ip);
      throw unauthenticated(detail);
    };
    if (!key || !looksLikeKey(key)) {
      if (await limit?.exhausted(ctx.ip)) await limit!.take(ctx.ip);
      if (!header) return fail('Send the header `Authorization: Bearer <API key>`.');
      if (!key) return fail('The Authorization header must have the form `Bearer <API key>`.');
      return fail('The API key is unknown or has been revoked.');
    }
    const found = await authenticateKey(dataSource, key);
    if (!found) return fail('The API key is unknown or has been revoked.');
    if (!found.ok) {
      // Whose key it was, for the audit log's record of the refusal; never a principal to act as.
      ctx.state.refusedPrincipal = found.principal;
      return fail(expiredKeyDetail(found.expiredAt, found.replaced));
    }
    ctx.state.principal = found.principal;
    uses?.note(found.principal.keyId);
    await next();
  };
}

/** The header the newest official client sends its `team_uid` argument in: the team a request acts for. */
export const ACTIVE_TEAM_HEADER = 'X-Warp-Team-Uid';

/**
 * `X-Warp-Team-Uid`: a key acts for its own team only, so the header may name that team (or be
 * empty); any other is 404 whether or not that team exists, as another team's resources are.
 */
export function requireOwnTeam(): Middleware {
  return async (ctx, next) => {
    const named = ctx.get(ACTIVE_TEAM_HEADER).trim();
    const { teamId } = principalOf(ctx.state);
    if (named && named.toLowerCase() !== teamId.toLowerCase()) {
      throw notFound(
        `No team ${JSON.stringify(named.slice(0, 100))} for this key: \`${ACTIVE_TEAM_HEADER}\` (the client's \`team_uid\`) may name only the key's own team, ${teamId}; omit it to act for that team.`,
      );
    }
    await next();
  };
}

export function principalOf(state: Record<string, unknown>): AuthenticatedPrincipal {
  return state.principal as AuthenticatedPrincipal;
}

/** 403 `not_authorized` unless the caller's key is an admin key of its team (`assertAdmin`). */
export function requireAdmin(state: Record<string, unknown>, what: string): void {
  assertAdmin(principalOf(state), what);
}
