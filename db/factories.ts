import type { EntityManager } from 'typeorm';
import type { AgentType } from './agent-identities';
import { FACTORY_COLUMNS as COLUMNS, newFactoryUid, toFactory, type Factory } from './factory-rows';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-page';

export { factoryFileLabel, newFactoryUid, toFactory, type Factory, type FactorySource } from './factory-rows';
export {
  fileAgentIdentityName,
  syncFileFactories,
  type FileFactorySyncResult,
  type FoundFactoryFile,
  type SkippedFactoryFile,
} from './file-factories';

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

/** What a factory made through the API sets. */
export interface FactoryFields {
  name: string;
  description: string | null;
  environmentId: string | null;
}

export async function createFactory(manager: EntityManager, teamId: string, fields: FactoryFields): Promise<Factory> {
  const rows = (await manager.query(
    `INSERT INTO factories (uid, team_id, name, description, environment_id)
     VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [newFactoryUid(), teamId, fields.name, fields.description, fields.environmentId],
  )) as Record<string, unknown>[];
  return toFactory(rows[0]!);
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

/** Replaces what an API factory sets; null when the team has no such API factory. */
export async function updateFactory(
  manager: EntityManager,
  uid: string,
  teamId: string,
  fields: FactoryFields,
): Promise<Factory | null> {
  const rows = (await manager.query(
    `UPDATE factories SET name = $3, description = $4, environment_id = $5, updated_at = clock_timestamp()
      WHERE uid = $1 AND team_id = $2 AND file_key IS NULL RETURNING ${COLUMNS}`,
    [uid, teamId, fields.name, fields.description, fields.environmentId],
  )) as [Record<string, unknown>[], number];
  return rows[0][0] ? toFactory(rows[0][0]) : null;
}

/** Deletes an API factory; its agents stay, detached (`factory_uid` null). False when there is none. */
export async function deleteFactory(manager: EntityManager, uid: string, teamId: string): Promise<boolean> {
  const deleted = (await manager.query(
    `DELETE FROM factories WHERE uid = $1 AND team_id = $2 AND file_key IS NULL RETURNING uid`,
    [uid, teamId],
  )) as [unknown[], number];
  if (deleted[1] === 0) return false;
  await manager.query(
    `UPDATE agent_identities SET factory_uid = NULL, updated_at = clock_timestamp() WHERE team_id = $1 AND factory_uid = $2`,
    [teamId, uid],
  );
  return true;
}

/** Locks the factory's row for the transaction (membership changes serialise on it); null when absent. */
export async function lockFactory(manager: EntityManager, uid: string, teamId: string): Promise<Factory | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM factories WHERE uid = $1 AND team_id = $2 FOR UPDATE`, [
    uid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toFactory(rows[0]) : null;
}
