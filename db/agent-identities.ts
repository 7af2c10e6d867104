import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-page';

import type { AgentType } from '../core/agent-types';
import type { ResolvedAgentConfig } from '../core/run-types';

export { AGENT_TYPES, type AgentType } from '../core/agent-types';

/** What an identity sets; `mcpServers` is stored encrypted (core/secrets.ts). */
export interface AgentIdentityFields {
  name: string;
  description: string | null;
  prompt: string | null;
  agentType: AgentType;
  factoryUid: string | null;
  environmentId: string | null;
  baseModel: string | null;
  mcpServers: Record<string, unknown> | null;
  skills: string[];
  workerHost: string | null;
  onBehalfOfEnabled: boolean;
  /** The harness its runs use unless they name one; null: this service's own loop (`oz`). */
  harness: NonNullable<ResolvedAgentConfig['harness']> | null;
  /** Names of the team's managed secrets its harness authenticates with; null: none. */
  harnessAuthSecrets: NonNullable<ResolvedAgentConfig['harness_auth_secrets']> | null;
}

export interface AgentIdentity extends AgentIdentityFields {
  uid: string;
  teamId: string;
  createdAt: Date;
  updatedAt: Date;
}

/** An identity that sets nothing but its name. */
export function defaultIdentityFields(name: string): AgentIdentityFields {
  return {
    name,
    description: null,
    prompt: null,
    agentType: 'CUSTOM',
    factoryUid: null,
    environmentId: null,
    baseModel: null,
    mcpServers: null,
    skills: [],
    workerHost: null,
    onBehalfOfEnabled: false,
    harness: null,
    harnessAuthSecrets: null,
  };
}

const COLUMNS = `uid, team_id, name, description, prompt, agent_type, factory_uid, environment_id, base_model,
  mcp_servers, skills, worker_host, on_behalf_of_enabled, harness, harness_auth_secrets, created_at, updated_at`;

function toIdentity(r: Record<string, unknown>): AgentIdentity {
  return {
    uid: r.uid as string,
    teamId: r.team_id as string,
    name: r.name as string,
    description: r.description as string | null,
    prompt: r.prompt as string | null,
    agentType: r.agent_type as AgentType,
    factoryUid: r.factory_uid as string | null,
    environmentId: r.environment_id as string | null,
    baseModel: r.base_model as string | null,
    mcpServers: r.mcp_servers as Record<string, unknown> | null,
    skills: r.skills as string[],
    workerHost: r.worker_host as string | null,
    onBehalfOfEnabled: r.on_behalf_of_enabled as boolean,
    harness: r.harness as AgentIdentityFields['harness'],
    harnessAuthSecrets: r.harness_auth_secrets as AgentIdentityFields['harnessAuthSecrets'],
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

const values = (f: AgentIdentityFields) => [
  f.name,
  f.description,
  f.prompt,
  f.agentType,
  f.factoryUid,
  f.environmentId,
  f.baseModel,
  f.mcpServers === null ? null : JSON.stringify(f.mcpServers),
  JSON.stringify(f.skills),
  f.workerHost,
  f.onBehalfOfEnabled,
  f.harness === null ? null : JSON.stringify(f.harness),
  f.harnessAuthSecrets === null ? null : JSON.stringify(f.harnessAuthSecrets),
];

/** Whether the team already has a live identity of that name (other than `exceptUid`). */
export async function identityNameTaken(
  manager: EntityManager,
  teamId: string,
  name: string,
  exceptUid = '',
): Promise<boolean> {
  const rows = (await manager.query(`SELECT 1 FROM agent_identities WHERE team_id = $1 AND name = $2 AND uid <> $3`, [
    teamId,
    name,
    exceptUid,
  ])) as unknown[];
  return rows.length > 0;
}

/** Creates the identity and the service-account principal it is. */
export async function createAgentIdentity(
  manager: EntityManager,
  teamId: string,
  fields: AgentIdentityFields,
): Promise<AgentIdentity> {
  const uid = `sa_${randomBytes(12).toString('base64url')}`;
  await manager.query(
    `INSERT INTO principals (uid, team_id, type, display_name) VALUES ($1, $2, 'service_account', $3)`,
    [uid, teamId, fields.name],
  );
  const rows = (await manager.query(
    `INSERT INTO agent_identities (uid, team_id, name, description, prompt, agent_type, factory_uid, environment_id,
       base_model, mcp_servers, skills, worker_host, on_behalf_of_enabled, harness, harness_auth_secrets)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12, $13, $14::jsonb, $15::jsonb)
     RETURNING ${COLUMNS}`,
    [uid, teamId, ...values(fields)],
  )) as Record<string, unknown>[];
  return toIdentity(rows[0]!);
}

export const IDENTITY_ORDER: KeysetOrder = { column: 'created_at', type: 'timestamptz', key: 'uid', direction: 'ASC' };

/** A page of the team's identities (of one factory when `factoryUid` is given), oldest first. */
export async function listAgentIdentities(
  manager: EntityManager,
  teamId: string,
  filter: { factoryUid?: string },
  page: { limit: number; after?: KeysetPosition },
): Promise<KeysetPage<AgentIdentity>> {
  const { rows, next } = await selectKeysetPage(
    manager,
    filter.factoryUid === undefined
      ? { columns: COLUMNS, from: 'agent_identities', where: 'team_id = $1', params: [teamId] }
      : {
          columns: COLUMNS,
          from: 'agent_identities',
          where: 'team_id = $1 AND factory_uid = $2',
          params: [teamId, filter.factoryUid],
        },
    IDENTITY_ORDER,
    page.limit,
    page.after,
  );
  return { rows: rows.map(toIdentity), ...(next ? { next } : {}) };
}

/** Every agent of a factory, oldest first. */
export async function listFactoryAgents(
  manager: EntityManager,
  teamId: string,
  factoryUid: string,
): Promise<AgentIdentity[]> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM agent_identities WHERE team_id = $1 AND factory_uid = $2 ORDER BY created_at, uid`,
    [teamId, factoryUid],
  )) as Record<string, unknown>[];
  return rows.map(toIdentity);
}

/** The factory's FOREMAN other than `exceptUid`, if it has one. */
export async function findOtherForeman(
  manager: EntityManager,
  teamId: string,
  factoryUid: string,
  exceptUid: string,
): Promise<AgentIdentity | null> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM agent_identities
      WHERE team_id = $1 AND factory_uid = $2 AND agent_type = 'FOREMAN' AND uid <> $3
      ORDER BY created_at, uid LIMIT 1`,
    [teamId, factoryUid, exceptUid],
  )) as Record<string, unknown>[];
  return rows[0] ? toIdentity(rows[0]) : null;
}

export async function findAgentIdentity(
  manager: EntityManager,
  uid: string,
  teamId: string,
): Promise<AgentIdentity | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM agent_identities WHERE uid = $1 AND team_id = $2`, [
    uid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toIdentity(rows[0]) : null;
}

/** The team's identity of that name, if any. */
export async function findAgentIdentityByName(
  manager: EntityManager,
  teamId: string,
  name: string,
): Promise<AgentIdentity | null> {
  const rows = (await manager.query(`SELECT ${COLUMNS} FROM agent_identities WHERE team_id = $1 AND name = $2`, [
    teamId,
    name,
  ])) as Record<string, unknown>[];
  return rows[0] ? toIdentity(rows[0]) : null;
}

/** Replaces what the identity sets; null when it does not exist in the team. */
export async function updateAgentIdentity(
  manager: EntityManager,
  uid: string,
  teamId: string,
  fields: AgentIdentityFields,
): Promise<AgentIdentity | null> {
  const rows = (await manager.query(
    `UPDATE agent_identities SET name = $3, description = $4, prompt = $5, agent_type = $6, factory_uid = $7,
       environment_id = $8, base_model = $9, mcp_servers = $10::jsonb, skills = $11::jsonb, worker_host = $12,
       on_behalf_of_enabled = $13, harness = $14::jsonb, harness_auth_secrets = $15::jsonb,
       updated_at = clock_timestamp()
     WHERE uid = $1 AND team_id = $2 RETURNING ${COLUMNS}`,
    [uid, teamId, ...values(fields)],
  )) as [Record<string, unknown>[], number];
  if (!rows[0][0]) return null;
  await manager.query(`UPDATE principals SET display_name = $2 WHERE uid = $1`, [uid, fields.name]);
  return toIdentity(rows[0][0]);
}

/** Deletes the identity and revokes every key of it, at once; false when it does not exist. */
export async function deleteAgentIdentity(manager: EntityManager, uid: string, teamId: string): Promise<boolean> {
  const deleted = (await manager.query(`DELETE FROM agent_identities WHERE uid = $1 AND team_id = $2 RETURNING uid`, [
    uid,
    teamId,
  ])) as [unknown[], number];
  if (deleted[1] === 0) return false;
  // The principal outlives the identity (its runs still name it) under a name a new identity
  // will not want: principal names are unique per team.
  await manager.query(
    `UPDATE principals SET display_name = display_name || ' (deleted ' || uid || ')' WHERE uid = $1`,
    [uid],
  );
  await manager.query(
    `UPDATE api_keys SET revoked_at = clock_timestamp() WHERE principal_uid = $1 AND revoked_at IS NULL`,
    [uid],
  );
  return true;
}
