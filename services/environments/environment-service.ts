import { notFound } from '../../core/api-error';
import { isEnvironmentUid } from '../../core/ids';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { deleteEnvironment, insertEnvironment, updateEnvironment } from '../../db/environments';
import { findEnvironment, type Environment, type EnvironmentConfig } from '../../db/environment-reads';
import { syncFileFactories } from '../../db/factories';
import { assertImageAllowed } from '../images/image-policy';
import { assertGitOwnerAllowed } from '../skills/git-owners';
import type { ServiceDeps } from '../service-deps';
import { assertTeamHasRoom } from '../team-caps';

/**
 * A team's environments: the repositories and image a run works in, within the operator's
 * GIT_ALLOWED_OWNERS and IMAGE_ALLOWED_REGISTRIES and TEAM_MAX_ENVIRONMENTS. Deleting one takes
 * the factories found in its repositories with it.
 */
export function createEnvironmentService({ config, dataSource }: Pick<ServiceDeps, 'config' | 'dataSource'>) {
  const checkSources = (env: EnvironmentConfig) => {
    for (const [index, repository] of (env.github_repos ?? []).entries()) {
      assertGitOwnerAllowed(config.workspace.gitAllowedOwners, repository, `config.github_repos.${index}.owner`);
    }
    if (env.docker_image !== undefined) {
      assertImageAllowed(config.workspace.imageAllowedRegistries, env.docker_image, 'config.docker_image');
    }
  };

  /** The team's environment, or 404. */
  async function load(uid: string, teamId: string): Promise<Environment> {
    const env = isEnvironmentUid(uid) ? await findEnvironment(dataSource.manager, uid, teamId) : null;
    if (!env) throw notFound(`No environment ${uid}.`);
    return env;
  }

  return {
    load,

    async create(principal: AuthenticatedPrincipal, env: EnvironmentConfig): Promise<Environment> {
      checkSources(env);
      return dataSource.transaction(async (tx) => {
        await assertTeamHasRoom(tx, 'environments', principal.teamId, config.quotas.teamMaxEnvironments);
        return insertEnvironment(tx, principal, env);
      });
    },

    async update(principal: AuthenticatedPrincipal, uid: string, env: EnvironmentConfig): Promise<Environment> {
      await load(uid, principal.teamId);
      checkSources(env);
      const updated = await updateEnvironment(dataSource.manager, uid, principal.teamId, env);
      if (!updated) throw notFound(`No environment ${uid}.`);
      return updated;
    },

    async delete(principal: AuthenticatedPrincipal, uid: string): Promise<void> {
      const { teamId } = principal;
      await load(uid, teamId);
      await dataSource.transaction(async (tx) => {
        await deleteEnvironment(tx, uid, teamId);
        // The factories found in its repositories go with it: nothing could run them any more.
        await syncFileFactories(tx, { teamId, environmentId: uid, found: [] });
      });
    },
  };
}

export type EnvironmentService = ReturnType<typeof createEnvironmentService>;
