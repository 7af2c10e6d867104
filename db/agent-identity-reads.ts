import type { EntityManager } from 'typeorm';
import { selectKeysetPage, type KeysetOrder, type KeysetPage, type KeysetPosition } from './keyset-reads';

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
  /** Calls of its runs that wait for a person (merged with each run's own); null: none. */
  approval: NonNullable<ResolvedAgentConfig['approval']> | null;
  /** What its runs do with a turn's change (under each run's own, field by field); null: nothing. */
  delivery: NonNullable<ResolvedAgentConfig['delivery']> | null;
}

export interface AgentIdentity extends AgentIdentityFields {
  uid: string;
  teamId: string;
  createdAt: Date;
  updatedAt: Date;
}

export const COLUMNS = `uid, team_id, name, description, prompt, agent_type, factory_uid, environment_id, base_model,
  mcp_servers, skills, worker_host, on_behalf_of_enabled, harness, harness_auth_secrets, approval, delivery, created_at,
  updated_at`;

export function toIdentity(r: Record<string, unknown>): AgentIdentity {
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
    approval: (r.approval ?? null) as AgentIdentityFields['approval'],
    delivery: (r.delivery ?? null) as AgentIdentityFields['delivery'],
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

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
