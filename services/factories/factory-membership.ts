import type { EntityManager } from 'typeorm';
import { findOtherForeman, type AgentIdentity, type AgentType } from '../../db/agent-identity-reads';
import { factoryFileLabel, findFactory, type Factory } from '../../db/factory-reads';
import { lockFactory } from '../../db/factories';
import { ApiError, invalid, notFound } from '../../core/api-error';
import { CLI_HARNESSES, isCliHarness } from '../../core/harnesses';

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
 * Refuses a harness other than this service's own loop (`oz`) for a factory's FOREMAN: the foreman
 * hands work to the factory's agents through this service's `dispatch_agent` and `wait_for_runs`
 * tools, which no CLI harness has. `field` names where the harness comes from, `fix` what to do.
 */
export function assertForemanHarness(
  agent: { name: string; agentType: AgentType; factory: Pick<Factory, 'uid' | 'name'> },
  harnessType: string | undefined,
  field: string,
  fix: string,
): void {
  if (agent.agentType !== 'FOREMAN' || !isCliHarness(harnessType)) return;
  const { title } = CLI_HARNESSES[harnessType];
  throw invalid(
    `${field}: agent "${agent.name}" is the FOREMAN of factory "${agent.factory.name}" (${agent.factory.uid}), and a foreman runs this service's own agent loop ("oz"), not ${title} ("${harnessType}"): it hands work to the factory's agents through this service's \`dispatch_agent\` and \`wait_for_runs\` tools, which ${title} does not have. ${fix}`,
  );
}

/**
 * Refuses an identity's membership that breaks a factory's rules: the factory must be the team's,
 * defined through the API, and have at most one FOREMAN, which keeps this service's own loop
 * (`harness`: its type, and the request field that sets it, with what to do instead). Runs in the
 * transaction that writes the identity; it locks the factory's row, so two agents cannot both
 * become its foreman.
 */
export async function assertFactoryMembership(
  tx: EntityManager,
  member: {
    teamId: string;
    factoryUid: string | null;
    agentType: AgentType;
    identityUid?: string;
    name: string;
    harness?: { type: string | undefined; field: string; fix: string };
  },
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
  if (member.harness) {
    const { type, field, fix } = member.harness;
    assertForemanHarness({ name: member.name, agentType: member.agentType, factory }, type, field, fix);
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
