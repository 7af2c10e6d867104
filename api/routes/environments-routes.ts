import Router from '@koa/router';
import { assertTeamHasRoom } from '../../services/team-caps';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import { isEnvironmentUid } from '../../core/ids';
import {
  deleteEnvironment,
  ENVIRONMENT_ORDERS,
  findEnvironment,
  insertEnvironment,
  listEnvironments,
  updateEnvironment,
  type Environment,
  type EnvironmentConfig,
} from '../../db/environments';
import { syncFileFactories } from '../../db/factories';
import { notFound } from '../../core/api-error';
import { assertImageAllowed } from '../../services/images/image-policy';
import { assertGitOwnerAllowed } from '../../services/skills/git-owners';
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
export function createEnvironmentsRouter({ config, dataSource }: { config: Config; dataSource: DataSource }): Router {
  const router = new Router();
  const checkOwners = (env: EnvironmentConfig) => {
    for (const [index, repository] of (env.github_repos ?? []).entries()) {
      assertGitOwnerAllowed(config.workspace.gitAllowedOwners, repository, `config.github_repos.${index}.owner`);
    }
    if (env.docker_image !== undefined) {
      assertImageAllowed(config.workspace.imageAllowedRegistries, env.docker_image, 'config.docker_image');
    }
  };
  const load = async (uid: string, teamId: string) => {
    const env = isEnvironmentUid(uid) ? await findEnvironment(dataSource.manager, uid, teamId) : null;
    if (!env) throw notFound(`No environment ${uid}.`);
    return env;
  };

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
    checkOwners(body.config);
    const principal = principalOf(ctx.state);
    const env = await dataSource.transaction(async (tx) => {
      await assertTeamHasRoom(tx, 'environments', principal.teamId, config.quotas.teamMaxEnvironments);
      return insertEnvironment(tx, principal, body.config);
    });
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/environments/${env.uid}`);
    ctx.body = toEnvironmentItem(env);
  });

  router.get('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = toEnvironmentItem(await load(ctx.params.uid!, principalOf(ctx.state).teamId));
  });

  router.put('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(environmentBodySchema, ctx.state.body);
    const uid = ctx.params.uid!;
    await load(uid, principalOf(ctx.state).teamId);
    checkOwners(body.config);
    const env = await updateEnvironment(dataSource.manager, uid, principalOf(ctx.state).teamId, body.config);
    if (!env) throw notFound(`No environment ${uid}.`);
    ctx.body = toEnvironmentItem(env);
  });

  router.delete('/agent/environments/:uid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const uid = ctx.params.uid!;
    const { teamId } = principalOf(ctx.state);
    await load(uid, teamId);
    await dataSource.transaction(async (tx) => {
      await deleteEnvironment(tx, uid, teamId);
      // The factories found in its repositories go with it: nothing could run them any more.
      await syncFileFactories(tx, { teamId, environmentId: uid, found: [] });
    });
    ctx.status = 204;
  });

  return router;
}
