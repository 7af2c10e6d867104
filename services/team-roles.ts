import { ApiError } from '../core/api-error';
import type { AuthenticatedPrincipal } from '../db/api-key-reads';

/**
 * 403 `not_authorized` unless the caller's key is an admin key of its team: what changes who may
 * act as whom (identities' permissions, their deletion), or where the team's data goes (webhooks).
 */
export function assertAdmin(principal: Pick<AuthenticatedPrincipal, 'role'>, what: string): void {
  if (principal.role === 'admin') return;
  throw new ApiError(
    'not_authorized',
    `Only an admin key of your team may ${what}; this key is a member key. An operator makes one with \`npm run keys -- create --role admin\` or \`npm run keys -- set-role <prefix> admin\`.`,
  );
}
