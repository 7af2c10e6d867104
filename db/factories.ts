import type { EntityManager } from 'typeorm';
import { listAgentIdentitiesWhere, type AgentIdentity } from './agent-identities';

/** Where a factory is defined: through the API, or in a FACTORY.md of an environment's repository. */
export type FactorySource =
  | { type: 'API' }
  | { type: 'FILE'; environment_id: string; repository: string; path: string };

export interface Factory {
  uid: string;
  teamId: string;
  name: string;
  description: string | null;
  environmentId: string | null;
  /** What every agent of the factory is told besides its own prompt (a FACTORY.md's body). */
  instructions: string | null;
  source: FactorySource;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = 'uid, team_id, name, description, environment_id, instructions, source, created_at, updated_at';

export function toFactory(r: Record<string, unknown>): Factory {
  return {
    uid: r.uid as string,
    teamId: r.team_id as string,
    name: r.name as string,
    description: (r.description as string | null) ?? null,
    environmentId: (r.environment_id as string | null) ?? null,
    instructions: (r.instructions as string | null) ?? null,
    source: r.source as FactorySource,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

export async function findFactory(manager: EntityManager, uid: string, teamId: string): Promise<Factory | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM factories WHERE uid = $1 AND team_id = $2`, [
    uid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toFactory(rows[0]) : null;
}

/** The agents of a factory: the team's identities whose `factory_uid` is it, oldest first. */
export function listFactoryAgents(manager: EntityManager, teamId: string, factoryUid: string): Promise<AgentIdentity[]> {
  return listAgentIdentitiesWhere(manager, teamId, 'factory_uid = $2', [factoryUid]);
}
