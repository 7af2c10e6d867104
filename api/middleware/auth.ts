import type { Middleware } from 'koa';
import type { DataSource } from 'typeorm';
import { authenticateKey, looksLikeKey, type AuthenticatedPrincipal } from '../../db/api-keys';
import type { ClientAddressLimit } from './client-address-limit';
import { ApiError } from '../../core/api-error';

const challenge = { 'WWW-Authenticate': 'Bearer' };

function unauthenticated(detail: string): ApiError {
  return new ApiError('authentication_required', detail, { headers: challenge });
}

/**
 * Resolves `Authorization: Bearer <key>` to a principal in `ctx.state.principal`, before anything
 * reads the request's body. Each failure counts against the client's address (`limit`); past it,
 * a request without a well-formed key is refused without a lookup, and every failure is a 429.
 */
export function authenticate(dataSource: DataSource, limit?: ClientAddressLimit): Middleware {
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
    const principal = await authenticateKey(dataSource, key);
    if (!principal) return fail('The API key is unknown or has been revoked.');
    ctx.state.principal = principal;
    await next();
  };
}

export function principalOf(state: Record<string, unknown>): AuthenticatedPrincipal {
  return state.principal as AuthenticatedPrincipal;
}

/**
 * 403 `not_authorized` unless the caller's key is an admin key of its team: what changes who may
 * act as whom (identities' permissions, their deletion), or where the team's data goes (webhooks).
 */
export function requireAdmin(state: Record<string, unknown>, what: string): void {
  if (principalOf(state).role === 'admin') return;
  throw new ApiError(
    'not_authorized',
    `Only an admin key of your team may ${what}; this key is a member key. An operator makes one with \`npm run keys -- create --role admin\` or \`npm run keys -- set-role <prefix> admin\`.`,
  );
}
