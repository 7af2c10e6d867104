import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import { findEnvironment } from '../../db/environments';
import {
  createFactory,
  deleteFactory,
  findFactoryWithAgents,
  FACTORY_ORDER,
  listFactories,
  updateFactory,
  type FactoryFields,
} from '../../db/factories';
import { invalid, notFound } from '../../core/api-error';
import { fileFactoryConflict } from '../../services/factories/factory-membership';
import { checkUntrustedFactoryFile } from '../../services/untrusted-parse/untrusted-parser';
import { servedModelIds } from '../../services/platform/model-list';
import { toFactoryItem } from '../factory-item';
import { principalOf } from '../middleware/auth';
import { readResourcePage } from '../resource-page';
import { keepMostSpecificRoutes } from '../middleware/specific-routes';
import { factoryBodySchema, factoryValidateBodySchema, type FactoryBody } from '../../core/schemas/factory-schemas';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/**
 * A team's factories (`/agent/factories`): made through the API, or found in a FACTORY.md of an
 * environment's repository (`source.type` FILE), which only that file changes.
 */
export function createFactoriesRouter({ config, dataSource }: { config: Config; dataSource: DataSource }): Router {
  const router = new Router();
  router.param('uid', storablePathId('factory'));

  const fieldsOf = async (body: FactoryBody, teamId: string): Promise<FactoryFields> => {
    if (body.environment_id && !(await findEnvironment(dataSource.manager, body.environment_id, teamId))) {
      // The request names something missing, not the resource its URL names: 400, not 404.
      throw invalid(`\`environment_id\`: no environment ${body.environment_id} in your team.`);
    }
    return { name: body.name, description: body.description ?? null, environmentId: body.environment_id ?? null };
  };

  /** The team's factory, or 404; a FILE factory is 409 for `change` (what the request would do to it). */
  const load = async (uid: string, teamId: string, change?: 'changed' | 'deleted') => {
    const factory = await findFactoryWithAgents(dataSource.manager, uid, teamId);
    if (!factory) throw notFound(`No factory ${uid}.`);
    if (change && factory.source.type === 'FILE') {
      throw fileFactoryConflict(factory, `Factory ${uid} ("${factory.name}")`, change);
    }
    return factory;
  };

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
    const { teamId } = principalOf(ctx.state);
    const factory = await createFactory(dataSource.manager, teamId, await fieldsOf(body, teamId));
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
    ctx.body = toFactoryItem(await load(ctx.params.uid!, principalOf(ctx.state).teamId));
  });

  router.put('/agent/factories/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.uid!;
    const { teamId } = principalOf(ctx.state);
    const { agents } = await load(uid, teamId, 'changed');
    const body = validate(factoryBodySchema, ctx.state.body);
    const factory = await updateFactory(dataSource.manager, uid, teamId, await fieldsOf(body, teamId));
    if (!factory) throw notFound(`No factory ${uid}.`);
    ctx.body = toFactoryItem({ ...factory, agents });
  });

  router.delete('/agent/factories/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.uid!;
    const { teamId } = principalOf(ctx.state);
    await load(uid, teamId, 'deleted');
    const deleted = await dataSource.transaction((tx) => deleteFactory(tx, uid, teamId));
    if (!deleted) throw notFound(`No factory ${uid}.`);
    ctx.status = 204;
  });

  return router;
}
