import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { findAgentIdentity, IDENTITY_ORDER, listAgentIdentities } from '../../db/agent-identity-reads';
import { findFactory } from '../../db/factory-reads';
import { notFound } from '../../core/api-error';
import { toAgentIdentityItem } from '../agent-identity-item';
import type { AgentIdentityService } from '../../services/identities/agent-identity-service';
import { principalOf, requireAdmin } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import {
  agentIdentityBodySchema,
  agentIdentityUpdateSchema,
  identityListQuerySchema,
} from '../../core/schemas/agent-identity-schemas';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/** A team's named agents (`/agent/identities`); deleting one revokes its keys. */
export function createAgentIdentitiesRouter({
  dataSource,
  identities,
}: {
  dataSource: DataSource;
  identities: AgentIdentityService;
}): Router {
  const router = new Router();
  router.param('uid', storablePathId('agent'));

  router.post('/agent/identities', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(agentIdentityBodySchema, ctx.state.body);
    const identity = await identities.create(principalOf(ctx.state), body);
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
    const principal = principalOf(ctx.state);
    const existing = await identities.changeable(principal, ctx.params.uid!, 'changed');
    const body = validate(agentIdentityUpdateSchema, ctx.state.body);
    ctx.body = toAgentIdentityItem(await identities.update(principal, existing, body));
  });

  router.delete('/agent/identities/:uid', async (ctx) => {
    requireAdmin(ctx.state, 'delete agents (which revokes their keys)');
    rejectQueryParameters(ctx.query);
    await identities.delete(principalOf(ctx.state), ctx.params.uid!);
    ctx.status = 204;
  });

  return router;
}
