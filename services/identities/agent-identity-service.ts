import type { EntityManager } from 'typeorm';
import { ApiError, invalid, notFound } from '../../core/api-error';
import type { Config } from '../../core/config';
import type { AgentIdentityBody, AgentIdentityUpdate } from '../../core/schemas/agent-identity-schemas';
import { rejectUnsupported } from '../../core/unsupported-fields';
import {
  createAgentIdentity,
  defaultIdentityFields,
  deleteAgentIdentity,
  updateAgentIdentity,
} from '../../db/agent-identities';
import {
  findAgentIdentity,
  findAgentIdentityByName,
  identityNameTaken,
  type AgentIdentity,
} from '../../db/agent-identity-reads';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { findEnvironment } from '../../db/environment-reads';
import { assertFactoryMembership, assertNotFileAgent } from '../factories/factory-membership';
import { assertServedModel } from '../platform/model-list';
import { assertSkillOwnerAllowed } from '../skills/git-owners';
import type { ServiceDeps } from '../service-deps';
import { assertTeamHasRoom } from '../team-caps';
import { assertAdmin } from '../team-roles';
import { assertDeliveryCredential } from '../runs/delivery-request';
import { applyIdentityUpdate } from './agent-identity-update';
import { checkIdentityHarness, foremanHarnessCheck } from './identity-harness';

/**
 * A team's named agents: their create, change and delete (which revokes their keys), with the
 * rules of each (names unique in the team, TEAM_MAX_AGENTS, a factory's membership, the harness,
 * who may let an agent act on behalf of members). The API's routes and `npm run keys` use it.
 */
export function createAgentIdentityService({ config, dataSource, secretsKeyring }: ServiceDeps) {
  const manager = dataSource.manager;

  /** Refuses what this service cannot honour and checks the fields given against the team. */
  async function checkFields(body: AgentIdentityUpdate, teamId: string, uid = ''): Promise<void> {
    rejectUnsupported([
      {
        path: 'inference_providers',
        value: body.inference_providers,
        why: 'models come from the providers the operator configures.',
      },
      {
        path: 'credential_strategy',
        value: body.credential_strategy,
        why: "repositories are cloned with the environment's token.",
      },
      {
        path: 'default_runner_uid',
        value: body.default_runner_uid,
        why: "runs execute on this service's workers; use `worker_host` to pick one.",
      },
      { path: 'memory', value: body.memory, why: 'there are no memory stores.' },
      {
        path: 'secrets',
        value: body.secrets,
        why: 'give credentials to MCP servers in `mcp_servers` (stored encrypted).',
      },
    ]);
    if (body.name !== undefined && (await identityNameTaken(manager, teamId, body.name, uid))) {
      throw new ApiError('conflict', `Your team already has an agent named "${body.name}"; choose another name.`, {
        retryable: false,
      });
    }
    if (body.environment_id && !(await findEnvironment(manager, body.environment_id, teamId))) {
      // The request names something missing, not the resource its URL names: 400, not 404.
      throw invalid(`\`environment_id\`: no environment ${body.environment_id} in your team.`);
    }
    for (const [index, skill] of (body.skills ?? []).entries()) {
      assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, skill, `skills.${index}`);
    }
    if (body.base_model) assertServedModel(config, body.base_model, 'base_model');
    const pullRequest = body.delivery?.pull_request;
    if (pullRequest) await assertDeliveryCredential(manager, teamId, pullRequest, 'delivery');
  }

  return {
    async create(principal: AuthenticatedPrincipal, body: AgentIdentityBody): Promise<AgentIdentity> {
      const { teamId } = principal;
      if (body.on_behalf_of_enabled) {
        assertAdmin(principal, 'let an agent act on behalf of members (`on_behalf_of_enabled`)');
      }
      await checkFields(body, teamId);
      const fields = applyIdentityUpdate(defaultIdentityFields(body.name), body, secretsKeyring);
      await checkIdentityHarness(manager, teamId, body, fields);
      return dataSource.transaction(async (tx) => {
        await assertTeamHasRoom(tx, 'agent_identities', teamId, config.quotas.teamMaxAgents);
        await assertFactoryMembership(tx, {
          teamId,
          factoryUid: fields.factoryUid,
          agentType: fields.agentType,
          name: fields.name,
          harness: foremanHarnessCheck(body, fields),
        });
        return createAgentIdentity(tx, teamId, fields);
      });
    },

    /** The team's agent that the API may change or delete: 404 when absent, 409 when a FACTORY.md defines it. */
    async changeable(
      principal: AuthenticatedPrincipal,
      uid: string,
      action: 'changed' | 'deleted',
    ): Promise<AgentIdentity> {
      const existing = await findAgentIdentity(manager, uid, principal.teamId);
      if (!existing) throw notFound(`No agent ${uid}.`);
      await assertNotFileAgent(manager, existing, action);
      return existing;
    },

    /** `existing` (from `changeable`) with `body` applied; what it does not send keeps its value. */
    async update(
      principal: AuthenticatedPrincipal,
      existing: AgentIdentity,
      body: AgentIdentityUpdate,
    ): Promise<AgentIdentity> {
      const { teamId } = principal;
      const { uid } = existing;
      const onBehalfOf = body.on_behalf_of_enabled;
      if (onBehalfOf !== undefined && onBehalfOf !== null && onBehalfOf !== existing.onBehalfOfEnabled) {
        assertAdmin(principal, 'change whether an agent acts on behalf of members (`on_behalf_of_enabled`)');
      }
      await checkFields(body, teamId, uid);
      const fields = applyIdentityUpdate(existing, body, secretsKeyring);
      await checkIdentityHarness(manager, teamId, body, fields);
      const identity = await dataSource.transaction(async (tx) => {
        await assertFactoryMembership(tx, {
          teamId,
          factoryUid: fields.factoryUid,
          agentType: fields.agentType,
          identityUid: uid,
          name: fields.name,
          harness: foremanHarnessCheck(body, fields),
        });
        return updateAgentIdentity(tx, uid, teamId, fields);
      });
      if (!identity) throw notFound(`No agent ${uid}.`);
      return identity;
    },

    /** Deletes the agent and revokes its keys; 404 when the team has none of that uid. */
    async delete(principal: AuthenticatedPrincipal, uid: string): Promise<void> {
      const existing = await findAgentIdentity(manager, uid, principal.teamId);
      if (existing) await assertNotFileAgent(manager, existing, 'deleted');
      const deleted = await dataSource.transaction((tx) => deleteAgentIdentity(tx, uid, principal.teamId));
      if (!deleted) throw notFound(`No agent ${uid}.`);
    },
  };
}

export type AgentIdentityService = ReturnType<typeof createAgentIdentityService>;

/**
 * The team's agent of that name, made with the defaults when there is none (under
 * TEAM_MAX_AGENTS), inside the caller's transaction: an agent key named by its agent's name.
 */
export async function ensureNamedAgentIdentity(
  tx: EntityManager,
  config: Pick<Config, 'quotas'>,
  teamId: string,
  name: string,
): Promise<AgentIdentity> {
  const existing = await findAgentIdentityByName(tx, teamId, name);
  if (existing) return existing;
  await assertTeamHasRoom(tx, 'agent_identities', teamId, config.quotas.teamMaxAgents);
  return createAgentIdentity(tx, teamId, defaultIdentityFields(name));
}
