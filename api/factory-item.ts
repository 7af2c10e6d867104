import type { FactoryWithAgents } from '../db/factory-reads';

/** A factory as the API returns it, with its agents and where it is defined (`source`). */
export function toFactoryItem(factory: FactoryWithAgents) {
  return {
    uid: factory.uid,
    name: factory.name,
    description: factory.description,
    environment_id: factory.environmentId,
    instructions: factory.instructions,
    agents: factory.agents.map((a) => ({ uid: a.uid, name: a.name, agent_type: a.agentType })),
    source: factory.source,
    created_at: factory.createdAt.toISOString(),
    updated_at: factory.updatedAt.toISOString(),
  };
}

/**
 * A factory as the newest official client reads it at `/factory` (`Factory`): the fields above,
 * and the ones it requires, from what this service has: the team, the default environment and
 * its repositories (GitHub), and empty defaults for what it does not keep per factory.
 */
export function toFactoryResource(
  factory: FactoryWithAgents,
  teamId: string,
  repositories: { owner: string; repo: string }[],
) {
  const forge = repositories.length ? ('GITHUB' as const) : ('NONE' as const);
  return {
    ...toFactoryItem(factory),
    team_uid: teamId,
    ...(factory.environmentId ? { default_environment: factory.environmentId } : {}),
    agent_defaults: { default_runner_uid: '', mcp_servers: {}, secrets: [], worker_host: '' },
    code_forge: forge,
    code_forges: [forge],
    credential_strategy: 'CREATOR' as const,
    repositories: repositories.map((r) => ({ ...r, code_forge: 'GITHUB' as const })),
    scorer_defaults: {},
    scoring: {},
  };
}
