import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { ENVIRONMENT_ORDERS, listEnvironments, type Environment } from '../../db/environment-reads';
import type { EnvironmentService } from '../../services/environments/environment-service';
import { principalOf } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import { environmentBodySchema, environmentListQuerySchema } from '../../core/schemas/environment-schemas';
import { rejectQueryParameters, validate } from '../validate';

/** `CloudEnvironment` as the API returns it. */
export function toEnvironmentItem(env: Environment) {
  return {
    uid: env.uid,
    config: env.config,
    setup_failed: env.setupFailed,
    last_updated: env.lastUpdated.toISOString(),
    created_at: env.createdAt.toISOString(),
    creator: env.creator,
  };
}

/** CRUD for a team's environments; same auth, scoping and error rules as runs. */
export function createEnvironmentsRouter({
  dataSource,
  environments,
}: {
  dataSource: DataSource;
  environments: EnvironmentService;
}): Router {
  const router = new Router();

  router.get('/agent/environments', async (ctx) => {
    const query = validate(environmentListQuerySchema, ctx.query, 'query');
    const sort = query.sort_by ?? 'last_updated';
    const page = await listEnvironments(
      dataSource.manager,
      principalOf(ctx.state).teamId,
      sort,
      resourcePageOf(query, sort, ENVIRONMENT_ORDERS[sort]),
    );
    ctx.body = { environments: page.rows.map(toEnvironmentItem), page_info: resourcePageInfo(page, sort) };
  });

  router.post('/agent/environments', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(environmentBodySchema, ctx.state.body);
    const env = await environments.create(principalOf(ctx.state), body.config);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/environments/${env.uid}`);
    ctx.body = toEnvironmentItem(env);
  });

  router.get('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = toEnvironmentItem(await environments.load(ctx.params.uid!, principalOf(ctx.state).teamId));
  });

  router.put('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(environmentBodySchema, ctx.state.body);
    ctx.body = toEnvironmentItem(await environments.update(principalOf(ctx.state), ctx.params.uid!, body.config));
  });

  router.delete('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await environments.delete(principalOf(ctx.state), ctx.params.uid!);
    ctx.status = 204;
  });

  return router;
}
