import type { FactoryWithAgents } from '../db/factories';

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
