import type { EntityManager } from 'typeorm';
import type { AgentType } from './agent-identity-reads';
import { FACTORY_COLUMNS as COLUMNS, toFactory, type Factory } from './rows/factory';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

export { factoryFileLabel, toFactory, type Factory, type FactorySource } from './rows/factory';

export async function findFactory(manager: EntityManager, uid: string, teamId: string): Promise<Factory | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM factories WHERE uid = $1 AND team_id = $2`, [
    uid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toFactory(rows[0]) : null;
}

/** An agent as a factory lists it. */
export interface FactoryAgentSummary {
  uid: string;
  name: string;
  agentType: AgentType;
}

export interface FactoryWithAgents extends Factory {
  agents: FactoryAgentSummary[];
}

export const FACTORY_ORDER: KeysetOrder = { column: 'created_at', type: 'timestamptz', key: 'uid', direction: 'ASC' };

/** A page of the team's factories, oldest first, each with its agents (two queries, whatever the count). */
export async function listFactories(
  manager: EntityManager,
  teamId: string,
  page: { limit: number; after?: KeysetPosition },
  /** Only factories whose name contains it, ignoring case. */
  search?: string,
): Promise<KeysetPage<FactoryWithAgents>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    {
      columns: COLUMNS,
      from: 'factories',
      where: `team_id = $1 AND ($2::text IS NULL OR strpos(lower(name), lower($2::text)) > 0)`,
      params: [teamId, search ?? null],
    },
    FACTORY_ORDER,
    page.limit,
    page.after,
  );
  const factories = rows.map(toFactory);
  const agents = await agentSummaries(
    manager,
    teamId,
    factories.map((f) => f.uid),
  );
  return { rows: factories.map((f) => ({ ...f, agents: agents.get(f.uid) ?? [] })), ...(next ? { next } : {}) };
}

export async function findFactoryWithAgents(
  manager: EntityManager,
  uid: string,
  teamId: string,
): Promise<FactoryWithAgents | null> {
  const factory = await findFactory(manager, uid, teamId);
  if (!factory) return null;
  return { ...factory, agents: (await agentSummaries(manager, teamId, [uid])).get(uid) ?? [] };
}

async function agentSummaries(
  manager: EntityManager,
  teamId: string,
  factoryUids: string[],
): Promise<Map<string, FactoryAgentSummary[]>> {
  const byFactory = new Map<string, FactoryAgentSummary[]>();
  if (!factoryUids.length) return byFactory;
  const rows = (await manager.query(
    `SELECT uid, name, agent_type, factory_uid FROM agent_identities
      WHERE team_id = $1 AND factory_uid = ANY($2::text[]) ORDER BY created_at, uid`,
    [teamId, factoryUids],
  )) as { uid: string; name: string; agent_type: AgentType; factory_uid: string }[];
  for (const r of rows) {
    const list = byFactory.get(r.factory_uid) ?? [];
    list.push({ uid: r.uid, name: r.name, agentType: r.agent_type });
    byFactory.set(r.factory_uid, list);
  }
  return byFactory;
}
