import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { FactoryFile, FactoryFileAgent } from '../core/factory-file';
import {
  createAgentIdentity,
  deleteAgentIdentity,
  listFactoryAgents,
  updateAgentIdentity,
  type AgentIdentity,
  type AgentIdentityFields,
  type AgentType,
} from './agent-identities';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-page';

/** Where a factory is defined: through the API, or in a FACTORY.md of an environment's repository. */
export type FactorySource =
  { type: 'API' } | { type: 'FILE'; environment_id: string; repository: string; path: string };

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

/** A factory uid: `fac_` and 96 random bits, URL-safe. */
export function newFactoryUid(): string {
  return `fac_${randomBytes(12).toString('base64url')}`;
}

export const FACTORY_ORDER: KeysetOrder = { column: 'created_at', type: 'timestamptz', key: 'uid', direction: 'ASC' };

/** A page of the team's factories, oldest first, each with its agents (two queries, whatever the count). */
export async function listFactories(
  manager: EntityManager,
  teamId: string,
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<FactoryWithAgents>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    { columns: COLUMNS, from: 'factories', where: 'team_id = $1', params: [teamId] },
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

/** Where a FILE factory is defined, as a person would look for it: `owner/repo:path`. */
export function factoryFileLabel(source: Extract<FactorySource, { type: 'FILE' }>): string {
  return `${source.repository}:${source.path}`;
}

/** A FACTORY.md found in a repository of an environment. */
export interface FoundFactoryFile {
  /** `owner/repo`. */
  repository: string;
  /** Path of the file inside the repository: `.agents/factories/<name>/FACTORY.md`. */
  path: string;
  factory: FactoryFile;
}

export interface FileFactorySyncResult {
  /** The factories recorded, in the order found; `changed` when this sync created or altered it. */
  synced: { uid: string; name: string; file: string; agents: number; changed: boolean }[];
  /** File factories of the environment that were not found any more, deleted with their agents. */
  removed: { uid: string; name: string; file: string }[];
  /** Files that could not be recorded (an agent name another agent of the team has); nothing of them changed. */
  conflicts: { file: string; message: string }[];
}

/** The identity name of a file factory's agent: identity names are unique per team, agent names per factory. */
export function fileAgentIdentityName(factoryName: string, agentName: string): string {
  return `${factoryName}/${agentName}`;
}

function fileKey(environmentId: string, repository: string, filePath: string): string {
  return `${environmentId}:${repository}:${filePath}`;
}

/**
 * Records the factories found in one environment's repositories: creates or updates each (by
 * its `file_key`) and its agents, and deletes the environment's file factories that were not
 * found (nor kept), with their agents. Idempotent: a second sync of the same files changes
 * nothing. Runs in a transaction (its own when `manager` is not in one) under a lock on the team,
 * so that racing provisionings, of this environment or another with a factory of the same name,
 * serialise instead of tripping over identity names.
 */
export async function syncFileFactories(
  manager: EntityManager,
  input: {
    teamId: string;
    environmentId: string;
    found: FoundFactoryFile[];
    /** Files that exist but could not be read or parsed: what they defined before stays as it was. */
    keep?: { repository: string; path: string }[];
  },
): Promise<FileFactorySyncResult> {
  if (!manager.queryRunner?.isTransactionActive) {
    return manager.transaction((tx) => syncFileFactories(tx, input));
  }
  const { teamId, environmentId } = input;
  await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`file-factories:${teamId}`]);
  const existing = new Map(
    (
      (await manager.query(
        `SELECT ${COLUMNS}, file_key FROM factories
          WHERE team_id = $1 AND file_key IS NOT NULL AND source->>'environment_id' = $2`,
        [teamId, environmentId],
      )) as Record<string, unknown>[]
    ).map((r) => [r.file_key as string, toFactory(r)]),
  );
  const found = new Map(input.found.map((f) => [fileKey(environmentId, f.repository, f.path), f]));
  const kept = new Set((input.keep ?? []).map((f) => fileKey(environmentId, f.repository, f.path)));
  const result: FileFactorySyncResult = { synced: [], removed: [], conflicts: [] };

  // Removals first: a factory that moved to another repository frees its agents' names.
  for (const [key, factory] of existing) {
    if (found.has(key) || kept.has(key)) continue;
    for (const agent of await listFactoryAgents(manager, teamId, factory.uid)) {
      await deleteAgentIdentity(manager, agent.uid, teamId);
    }
    await manager.query(`DELETE FROM factories WHERE uid = $1 AND team_id = $2`, [factory.uid, teamId]);
    result.removed.push({ uid: factory.uid, name: factory.name, file: fileLabel(factory.source) });
  }

  for (const [key, file] of found) {
    const label = `${file.repository}:${file.path}`;
    const current = existing.get(key);
    const names = file.factory.agents.map((a) => fileAgentIdentityName(file.factory.name, a.name));
    const taken = (await manager.query(
      `SELECT uid, name, factory_uid FROM agent_identities
        WHERE team_id = $1 AND name = ANY($2::text[]) AND factory_uid IS DISTINCT FROM $3`,
      [teamId, names, current?.uid ?? null],
    )) as { uid: string; name: string; factory_uid: string | null }[];
    if (taken.length) {
      const first = taken[0]!;
      result.conflicts.push({
        file: label,
        message: `agent name "${first.name}" is already taken by agent ${first.uid}${first.factory_uid ? ` of factory ${first.factory_uid}` : ''}; rename this factory (its directory and \`name\`) or that agent`,
      });
      continue;
    }

    const source: Extract<FactorySource, { type: 'FILE' }> = {
      type: 'FILE',
      environment_id: environmentId,
      repository: file.repository,
      path: file.path,
    };
    const definition = {
      name: file.factory.name,
      description: file.factory.description,
      instructions: file.factory.instructions || null,
      source,
    };
    let uid: string;
    let changed = false;
    if (!current) {
      uid = newFactoryUid();
      await manager.query(
        `INSERT INTO factories (uid, team_id, name, description, environment_id, instructions, source, file_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
        [
          uid,
          teamId,
          definition.name,
          definition.description,
          environmentId,
          definition.instructions,
          JSON.stringify(source),
          key,
        ],
      );
      changed = true;
    } else {
      uid = current.uid;
      changed =
        current.name !== definition.name ||
        current.description !== definition.description ||
        current.instructions !== definition.instructions ||
        !sameFileSource(current.source, source);
    }

    const wanted = new Map(
      file.factory.agents.map((a) => [
        fileAgentIdentityName(file.factory.name, a.name),
        fileAgentFields(file.factory.name, a, uid, environmentId),
      ]),
    );
    const agents = current ? await listFactoryAgents(manager, teamId, uid) : [];
    for (const agent of agents) {
      if (wanted.has(agent.name)) continue;
      await deleteAgentIdentity(manager, agent.uid, teamId);
      changed = true;
    }
    for (const [name, fields] of wanted) {
      const agent = agents.find((a) => a.name === name);
      if (!agent) {
        await createAgentIdentity(manager, teamId, fields);
        changed = true;
      } else if (!sameFileAgentFields(agent, fields)) {
        await updateAgentIdentity(manager, agent.uid, teamId, fields);
        changed = true;
      }
    }
    if (current && changed) {
      await manager.query(
        `UPDATE factories SET name = $3, description = $4, instructions = $5, source = $6::jsonb, updated_at = clock_timestamp()
          WHERE uid = $1 AND team_id = $2`,
        [uid, teamId, definition.name, definition.description, definition.instructions, JSON.stringify(source)],
      );
    }
    result.synced.push({ uid, name: definition.name, file: label, agents: wanted.size, changed });
  }
  return result;
}

/** jsonb keeps its own key order, so sources compare field by field. */
function sameFileSource(stored: FactorySource, source: Extract<FactorySource, { type: 'FILE' }>): boolean {
  return (
    stored.type === 'FILE' &&
    stored.environment_id === source.environment_id &&
    stored.repository === source.repository &&
    stored.path === source.path
  );
}

function fileLabel(source: FactorySource): string {
  return source.type === 'FILE' ? factoryFileLabel(source) : 'the API';
}

/** What an agent of a FACTORY.md is as an identity: the file says everything; the rest is the default. */
function fileAgentFields(
  factoryName: string,
  agent: FactoryFileAgent,
  factoryUid: string,
  environmentId: string,
): AgentIdentityFields {
  return {
    name: fileAgentIdentityName(factoryName, agent.name),
    description: agent.description,
    prompt: agent.prompt,
    agentType: agent.agent_type,
    factoryUid,
    environmentId,
    baseModel: agent.base_model,
    mcpServers: null,
    skills: agent.skills,
    workerHost: null,
    onBehalfOfEnabled: false,
  };
}

function sameFileAgentFields(agent: AgentIdentity, fields: AgentIdentityFields): boolean {
  return (
    agent.description === fields.description &&
    agent.prompt === fields.prompt &&
    agent.agentType === fields.agentType &&
    agent.factoryUid === fields.factoryUid &&
    agent.environmentId === fields.environmentId &&
    agent.baseModel === fields.baseModel &&
    agent.mcpServers === null &&
    agent.workerHost === null &&
    !agent.onBehalfOfEnabled &&
    JSON.stringify(agent.skills) === JSON.stringify(fields.skills)
  );
}
