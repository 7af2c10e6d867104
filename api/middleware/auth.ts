import type { Middleware } from 'koa';
import type { DataSource } from 'typeorm';
import { authenticateKey, type AuthenticatedPrincipal } from '../../db/api-keys';
import { ApiError } from '../api-error';

const challenge = { 'WWW-Authenticate': 'Bearer' };

function unauthenticated(detail: string): ApiError {
  return new ApiError('authentication_required', detail, { headers: challenge });
}

/** Resolves `Authorization: Bearer <key>` to a principal in `ctx.state.principal`. */
export function authenticate(dataSource: DataSource): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthenticated('Send the header `Authorization: Bearer <API key>`.');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthenticated('The Authorization header must have the form `Bearer <API key>`.');
    const principal = await authenticateKey(dataSource, match[1]!);
    if (!principal) throw unauthenticated('The API key is unknown or has been revoked.');
    ctx.state.principal = principal;
    await next();
  };
}

export function principalOf(state: Record<string, unknown>): AuthenticatedPrincipal {
  return state.principal as AuthenticatedPrincipal;
}
