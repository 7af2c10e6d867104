import type { EntityManager } from 'typeorm';
import { findAgentIdentity, type AgentIdentity } from '../../db/agent-identity-reads';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { findTeamUser } from '../../db/team-users';
import { ApiError, invalid, notFound } from '../../core/api-error';

/** Who a run is recorded as created by. */
export type RunPrincipal = Pick<AuthenticatedPrincipal, 'uid' | 'type' | 'displayName' | 'teamId'>;

/**
 * The agent identity a run executes as: the one it names (any key of the identity's team may
 * name it), else the caller's own when the caller is an agent key, else none.
 */
export async function resolveExecutor(
  manager: EntityManager,
  principal: RunPrincipal,
  agentIdentityUid: string | undefined,
): Promise<AgentIdentity | null> {
  if (agentIdentityUid !== undefined) {
    const identity = await findAgentIdentity(manager, agentIdentityUid, principal.teamId);
    if (!identity) throw notFound(`\`agent_identity_uid\`: no agent ${agentIdentityUid} in your team.`);
    return identity;
  }
  return principal.type === 'service_account' ? findAgentIdentity(manager, principal.uid, principal.teamId) : null;
}

/**
 * The run's creator: the caller, or with `on_behalf_of` the team member it names, as the
 * official clients document it: only an agent key may ask, only when its agent has
 * `on_behalf_of_enabled`, and only for a member of the run's team.
 */
export async function resolveCreator(
  manager: EntityManager,
  principal: RunPrincipal,
  executor: AgentIdentity | null,
  onBehalfOf: string | undefined,
): Promise<RunPrincipal> {
  if (onBehalfOf === undefined) return principal;
  if (principal.type !== 'service_account') {
    throw new ApiError('not_authorized', '`on_behalf_of` may only be used with an agent API key.');
  }
  const own =
    executor?.uid === principal.uid ? executor : await findAgentIdentity(manager, principal.uid, principal.teamId);
  if (!own?.onBehalfOfEnabled) {
    throw new ApiError(
      'not_authorized',
      `The agent of this key does not allow \`on_behalf_of\`; a team admin can enable \`on_behalf_of_enabled\` on agent ${principal.uid}.`,
    );
  }
  const user = await findTeamUser(manager, principal.teamId, onBehalfOf);
  if (!user) throw invalid(`\`on_behalf_of\`: no member ${onBehalfOf} in the run's team (give a user id or name).`);
  return { uid: user.uid, type: 'user', displayName: user.displayName, teamId: principal.teamId };
}
