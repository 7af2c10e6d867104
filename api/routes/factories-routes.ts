import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import { FACTORY_ORDER, listFactories } from '../../db/factory-reads';
import type { FactoryService } from '../../services/factories/factory-service';
import { checkUntrustedFactoryFile } from '../../services/untrusted-parse/untrusted-parser';
import { servedModelIds } from '../../services/platform/model-list';
import { toFactoryItem } from '../factory-item';
import { principalOf } from '../middleware/auth';
import { readResourcePage } from '../resource-page';
import { keepMostSpecificRoutes } from '../middleware/specific-routes';
import { factoryBodySchema, factoryValidateBodySchema } from '../../core/schemas/factory-schemas';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/**
 * A team's factories (`/agent/factories`): made through the API, or found in a FACTORY.md of an
 * environment's repository (`source.type` FILE), which only that file changes.
 */
export function createFactoriesRouter({
  config,
  dataSource,
  factories,
}: {
  config: Config;
  dataSource: DataSource;
  factories: FactoryService;
}): Router {
  const router = new Router();
  router.param('uid', storablePathId('factory'));

  // `/agent/factories/validate` is an action, not a factory named "validate" (factory uids are
  // `fac_…`): the factory routes' GET, PUT and DELETE neither run on it nor show in its `Allow`.
  router.use('/agent/factories/validate', (ctx, next) => {
    keepMostSpecificRoutes(ctx);
    return ctx.method === 'POST' ? next() : undefined;
  });

  router.post('/agent/factories/validate', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(factoryValidateBodySchema, ctx.state.body);
    ctx.body = await checkUntrustedFactoryFile(body.content, body.path, {
      gitAllowedOwners: config.workspace.gitAllowedOwners,
      servedModels: servedModelIds(config),
    });
  });

  router.post('/agent/factories', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(factoryBodySchema, ctx.state.body);
    const factory = await factories.create(principalOf(ctx.state), body);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/factories/${factory.uid}`);
    ctx.body = toFactoryItem({ ...factory, agents: [] });
  });

  router.get('/agent/factories', async (ctx) => {
    const { rows, page_info } = await readResourcePage(ctx, FACTORY_ORDER, (teamId, page) =>
      listFactories(dataSource.manager, teamId, page),
    );
    ctx.body = { factories: rows.map(toFactoryItem), page_info };
  });

  router.get('/agent/factories/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = toFactoryItem(await factories.load(principalOf(ctx.state), ctx.params.uid!));
  });

  router.put('/agent/factories/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const principal = principalOf(ctx.state);
    const existing = await factories.load(principal, ctx.params.uid!, 'changed');
    const body = validate(factoryBodySchema, ctx.state.body);
    ctx.body = toFactoryItem(await factories.update(principal, existing, body));
  });

  router.delete('/agent/factories/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await factories.delete(principalOf(ctx.state), ctx.params.uid!);
    ctx.status = 204;
  });

  return router;
}
