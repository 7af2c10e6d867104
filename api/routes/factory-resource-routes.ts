import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { notFound } from '../../core/api-error';
import { formatTicketRef, parseTicketRef, ticketOfMetadata } from '../../core/factory-tickets';
import { factoryResourceListQuerySchema, factoryTicketDispatchSchema } from '../../core/schemas/factory-schemas';
import { environmentRepositories } from '../../db/environment-reads';
import { FACTORY_ORDER, findFactoryWithAgents, listFactories, type FactoryWithAgents } from '../../db/factory-reads';
import { findRun } from '../../db/run-reads';
import { readIdempotencyKey, REPLAYED_HEADER } from '../../services/runs/idempotency';
import type { createRunService } from '../../services/runs/run-service';
import { toFactoryResource } from '../factory-item';
import { principalOf } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/**
 * The team's factories where the newest official client looks for them (`/factory`): the same
 * factories as `/agent/factories`, in its `Factory` shape, and work dispatched for a ticket
 * (with its task on the factory's board).
 */
export function createFactoryResourceRouter({
  dataSource,
  runService,
}: {
  dataSource: DataSource;
  runService: ReturnType<typeof createRunService>;
}): Router {
  const router = new Router();
  router.param('uid', storablePathId('factory'));

  const resources = async (factories: FactoryWithAgents[], teamId: string) => {
    const envs = factories.map((f) => f.environmentId).filter((e): e is string => e !== null);
    const repos = await environmentRepositories(dataSource.manager, teamId, [...new Set(envs)]);
    return factories.map((f) => toFactoryResource(f, teamId, (f.environmentId && repos.get(f.environmentId)) || []));
  };
  const load = async (uid: string, teamId: string) => {
    const factory = await findFactoryWithAgents(dataSource.manager, uid, teamId);
    if (!factory) throw notFound(`No factory ${uid}.`);
    return factory;
  };

  router.get('/factory', async (ctx) => {
    const query = validate(factoryResourceListQuerySchema, ctx.query, 'query');
    const { teamId } = principalOf(ctx.state);
    const page =
      query.team_uid !== undefined && query.team_uid !== teamId
        ? { rows: [] }
        : await listFactories(
            dataSource.manager,
            teamId,
            resourcePageOf(query, FACTORY_ORDER.column, FACTORY_ORDER),
            query.search,
          );
    ctx.body = {
      factories: await resources(page.rows, teamId),
      page_info: resourcePageInfo(page, FACTORY_ORDER.column),
    };
  });

  router.get('/factory/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const { teamId } = principalOf(ctx.state);
    ctx.body = (await resources([await load(ctx.params.uid!, teamId)], teamId))[0];
  });

  router.post('/factory/:uid/runs', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const { ticket_ref, ticket_url, ...work } = validate(factoryTicketDispatchSchema, ctx.state.body);
    const key = readIdempotencyKey(ctx.get('idempotency-key') || undefined);
    const principal = principalOf(ctx.state);
    const uid = ctx.params.uid!;
    const accepted = await runService.dispatchToFactory(principal, uid, work, key, {
      ...(ticket_ref ? { ref: parseTicketRef(ticket_ref) } : {}),
      ...(ticket_url ? { url: ticket_url } : {}),
    });
    const foreman = (await load(uid, principal.teamId)).agents.find((a) => a.agentType === 'FOREMAN');
    // From the run, which a replay of an earlier request answers too: its adhoc reference was minted then.
    const run = await findRun(dataSource.manager, accepted.runId, principal.teamId);
    const ticket = run && ticketOfMetadata(run.metadata);
    ctx.status = 201;
    if (accepted.replayed) ctx.set(REPLAYED_HEADER, 'true');
    ctx.set('Location', `/api/v1/agent/runs/${accepted.runId}`);
    ctx.body = {
      factory_uid: uid,
      foreman_agent: foreman?.name ?? '',
      run_id: accepted.runId,
      state: accepted.state,
      ticket_ref: ticket ? formatTicketRef(ticket) : '',
    };
  });
  return router;
}
