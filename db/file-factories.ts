import type { EntityManager } from 'typeorm';
import type { FactoryFile, FactoryFileAgent, FactoryFileProblem } from '../core/factory-file';
import { createAgentIdentity, deleteAgentIdentity, updateAgentIdentity } from './agent-identities';
import { listFactoryAgents, type AgentIdentity, type AgentIdentityFields } from './agent-identity-reads';
import {
  FACTORY_COLUMNS as COLUMNS,
  factoryFileLabel,
  newFactoryUid,
  toFactory,
  type FactorySource,
} from './rows/factory';

/** A factory file found in a repository of an environment: a FACTORY.md, or a tree's factory.yaml. */
export interface FoundFactoryFile {
  /** `owner/repo`. */
  repository: string;
  /** Path of the file inside the repository: `.agents/factories/<name>/FACTORY.md` or `…/factory.yaml`. */
  path: string;
  factory: FactoryFile;
}

/** A factory file that exists but was not recorded, and why. */
export interface SkippedFactoryFile {
  repository: string;
  path: string;
  errors: FactoryFileProblem[];
  /** False when what the file recorded before must go too (another file of its directory replaces it). */
  keepRecorded?: false;
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
    harness: null,
    harnessAuthSecrets: null,
    approval: null,
    delivery: null,
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
    agent.harness === null &&
    agent.harnessAuthSecrets === null &&
    JSON.stringify(agent.skills) === JSON.stringify(fields.skills)
  );
}
