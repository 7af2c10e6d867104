import Router from '@koa/router';
import { assertTeamHasRoom } from '../../services/team-caps';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import {
  createAgentIdentity,
  defaultIdentityFields,
  deleteAgentIdentity,
  findAgentIdentity,
  identityNameTaken,
  IDENTITY_ORDER,
  listAgentIdentities,
  updateAgentIdentity,
} from '../../db/agent-identities';
import { findEnvironment } from '../../db/environments';
import { findFactory } from '../../db/factories';
import { ApiError, invalid, notFound } from '../../core/api-error';
import { toAgentIdentityItem } from '../agent-identity-item';
import { applyIdentityUpdate } from '../../services/identities/agent-identity-update';
import { checkIdentityHarness, foremanHarnessCheck } from '../../services/identities/identity-harness';
import { assertServedModel } from '../../services/platform/model-list';
import { assertFactoryMembership, assertNotFileAgent } from '../../services/factories/factory-membership';
import { assertSkillOwnerAllowed } from '../../services/skills/git-owners';
import { principalOf, requireAdmin } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import {
  agentIdentityBodySchema,
  agentIdentityUpdateSchema,
  identityListQuerySchema,
  type AgentIdentityUpdate,
} from '../../core/schemas/agent-identity-schemas';
import { rejectUnsupported } from '../../core/unsupported-fields';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/** A team's named agents (`/agent/identities`); deleting one revokes its keys. */
export function createAgentIdentitiesRouter({
  config,
  dataSource,
  secretsKey,
}: {
  config: Config;
  dataSource: DataSource;
  secretsKey: Buffer;
}): Router {
  const router = new Router();
  router.param('uid', storablePathId('agent'));

  /** Refuses what this service cannot honour and checks the fields given against the team. */
  const checkBody = async (body: AgentIdentityUpdate, teamId: string, uid = ''): Promise<void> => {
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
    if (body.name !== undefined && (await identityNameTaken(dataSource.manager, teamId, body.name, uid))) {
      throw new ApiError('conflict', `Your team already has an agent named "${body.name}"; choose another name.`, {
        retryable: false,
      });
    }
    if (body.environment_id && !(await findEnvironment(dataSource.manager, body.environment_id, teamId))) {
      // The request names something missing, not the resource its URL names: 400, not 404.
      throw invalid(`\`environment_id\`: no environment ${body.environment_id} in your team.`);
    }
    for (const [index, skill] of (body.skills ?? []).entries()) {
      assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, skill, `skills.${index}`);
    }
    if (body.base_model) assertServedModel(config, body.base_model, 'base_model');
  };

  router.post('/agent/identities', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(agentIdentityBodySchema, ctx.state.body);
    const { teamId } = principalOf(ctx.state);
    if (body.on_behalf_of_enabled)
      requireAdmin(ctx.state, 'let an agent act on behalf of members (`on_behalf_of_enabled`)');
    await checkBody(body, teamId);
    const fields = applyIdentityUpdate(defaultIdentityFields(body.name), body, secretsKey);
    await checkIdentityHarness(dataSource.manager, teamId, body, fields);
    const identity = await dataSource.transaction(async (tx) => {
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
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/identities/${identity.uid}`);
    ctx.body = toAgentIdentityItem(identity);
  });

  router.get('/agent/identities', async (ctx) => {
    const query = validate(identityListQuerySchema, ctx.query, 'query');
    const { teamId } = principalOf(ctx.state);
    if (query.factory_uid !== undefined && !(await findFactory(dataSource.manager, query.factory_uid, teamId))) {
      throw notFound(`\`factory_uid\`: no factory ${query.factory_uid} in your team.`);
    }
    const page = await listAgentIdentities(
      dataSource.manager,
      teamId,
      query.factory_uid === undefined ? {} : { factoryUid: query.factory_uid },
      resourcePageOf(query, 'created_at', IDENTITY_ORDER),
    );
    ctx.body = { agents: page.rows.map(toAgentIdentityItem), page_info: resourcePageInfo(page, 'created_at') };
  });

  router.get('/agent/identities/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const identity = await findAgentIdentity(dataSource.manager, ctx.params.uid!, principalOf(ctx.state).teamId);
    if (!identity) throw notFound(`No agent ${ctx.params.uid}.`);
    ctx.body = toAgentIdentityItem(identity);
  });

  router.put('/agent/identities/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.uid!;
    const { teamId } = principalOf(ctx.state);
    const existing = await findAgentIdentity(dataSource.manager, uid, teamId);
    if (!existing) throw notFound(`No agent ${uid}.`);
    await assertNotFileAgent(dataSource.manager, existing, 'changed');
    const body = validate(agentIdentityUpdateSchema, ctx.state.body);
    const onBehalfOf = body.on_behalf_of_enabled;
    if (onBehalfOf !== undefined && onBehalfOf !== null && onBehalfOf !== existing.onBehalfOfEnabled) {
      requireAdmin(ctx.state, 'change whether an agent acts on behalf of members (`on_behalf_of_enabled`)');
    }
    await checkBody(body, teamId, uid);
    const fields = applyIdentityUpdate(existing, body, secretsKey);
    await checkIdentityHarness(dataSource.manager, teamId, body, fields);
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
    ctx.body = toAgentIdentityItem(identity);
  });

  router.delete('/agent/identities/:uid', async (ctx) => {
    requireAdmin(ctx.state, 'delete agents (which revokes their keys)');
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.uid!;
    const { teamId } = principalOf(ctx.state);
    const existing = await findAgentIdentity(dataSource.manager, uid, teamId);
    if (existing) await assertNotFileAgent(dataSource.manager, existing, 'deleted');
    const deleted = await dataSource.transaction((tx) => deleteAgentIdentity(tx, uid, teamId));
    if (!deleted) throw notFound(`No agent ${uid}.`);
    ctx.status = 204;
  });

  return router;
}
