import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';

import { type AgentIdentityFields, type AgentIdentity, COLUMNS, toIdentity } from './agent-identity-reads';

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
    approval: null,
    delivery: null,
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
  f.approval === null ? null : JSON.stringify(f.approval),
  f.delivery === null ? null : JSON.stringify(f.delivery),
];

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
       base_model, mcp_servers, skills, worker_host, on_behalf_of_enabled, harness, harness_auth_secrets, approval,
       delivery)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12, $13, $14::jsonb, $15::jsonb, $16::jsonb,
       $17::jsonb)
     RETURNING ${COLUMNS}`,
    [uid, teamId, ...values(fields)],
  )) as Record<string, unknown>[];
  return toIdentity(rows[0]!);
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
       on_behalf_of_enabled = $13, harness = $14::jsonb, harness_auth_secrets = $15::jsonb, approval = $16::jsonb,
       delivery = $17::jsonb, updated_at = clock_timestamp()
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
