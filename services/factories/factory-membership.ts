import type { EntityManager } from 'typeorm';
import { findOtherForeman, type AgentIdentity, type AgentType } from '../../db/agent-identities';
import { factoryFileLabel, findFactory, lockFactory, type Factory } from '../../db/factories';
import { ApiError, notFound } from '../../core/api-error';

const conflict = (detail: string) => new ApiError('conflict', detail, { retryable: false });

/** The 409 for changing, through the API, what a FACTORY.md defines: names the file to edit instead. */
export function fileFactoryConflict(
  factory: Factory,
  subject: string,
  action: string,
  fix = 'edit that file',
): ApiError {
  const where = factory.source.type === 'FILE' ? factoryFileLabel(factory.source) : 'a FACTORY.md';
  return conflict(
    `${subject} is defined in ${where}, so it cannot be ${action} through the API: ${fix} and commit it; the next run in environment ${factory.environmentId} picks the change up.`,
  );
}

/**
 * Refuses an identity's membership that breaks a factory's rules: the factory must be the team's,
 * defined through the API, and have at most one FOREMAN. Runs in the transaction that writes the
 * identity; it locks the factory's row, so two agents cannot both become its foreman.
 */
export async function assertFactoryMembership(
  tx: EntityManager,
  member: { teamId: string; factoryUid: string | null; agentType: AgentType; identityUid?: string },
): Promise<void> {
  if (!member.factoryUid) return;
  const factory = await lockFactory(tx, member.factoryUid, member.teamId);
  if (!factory) throw notFound(`\`factory_uid\`: no factory ${member.factoryUid} in your team.`);
  if (factory.source.type === 'FILE') {
    throw fileFactoryConflict(
      factory,
      `\`factory_uid\`: factory ${factory.uid} ("${factory.name}")`,
      'joined',
      'add the agent to that file',
    );
  }
  if (member.agentType !== 'FOREMAN') return;
  const foreman = await findOtherForeman(tx, member.teamId, factory.uid, member.identityUid ?? '');
  if (foreman) {
    throw conflict(
      `Factory ${factory.uid} ("${factory.name}") already has a foreman, "${foreman.name}" (${foreman.uid}); a factory has one FOREMAN: give this agent another \`agent_type\`, or change that one first.`,
    );
  }
}

/** Refuses changing or deleting, through the API, an agent that a FACTORY.md defines. */
export async function assertNotFileAgent(
  manager: EntityManager,
  identity: AgentIdentity,
  action: 'changed' | 'deleted',
): Promise<void> {
  if (!identity.factoryUid) return;
  const factory = await findFactory(manager, identity.factoryUid, identity.teamId);
  if (factory?.source.type === 'FILE') {
    throw fileFactoryConflict(factory, `Agent ${identity.uid} ("${identity.name}")`, action);
  }
}
