import { invalid, notFound } from '../../core/api-error';
import type { FactoryBody } from '../../core/schemas/factory-schemas';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { findEnvironment } from '../../db/environment-reads';
import { createFactory, deleteFactory, updateFactory, type FactoryFields } from '../../db/factories';
import { findFactoryWithAgents, type Factory, type FactoryWithAgents } from '../../db/factory-reads';
import type { ServiceDeps } from '../service-deps';
import { fileFactoryConflict } from './factory-membership';

/**
 * A team's factories made through the API: their create, change and delete (its agents stay,
 * detached). One found in a FACTORY.md (`source.type` FILE) only that file changes: 409.
 */
export function createFactoryService({ dataSource }: Pick<ServiceDeps, 'dataSource'>) {
  const manager = dataSource.manager;

  async function fieldsOf(body: FactoryBody, teamId: string): Promise<FactoryFields> {
    if (body.environment_id && !(await findEnvironment(manager, body.environment_id, teamId))) {
      // The request names something missing, not the resource its URL names: 400, not 404.
      throw invalid(`\`environment_id\`: no environment ${body.environment_id} in your team.`);
    }
    return { name: body.name, description: body.description ?? null, environmentId: body.environment_id ?? null };
  }

  /** The team's factory, or 404; a FILE factory is 409 for `change` (what the request would do to it). */
  async function load(
    principal: AuthenticatedPrincipal,
    uid: string,
    change?: 'changed' | 'deleted',
  ): Promise<FactoryWithAgents> {
    const factory = await findFactoryWithAgents(manager, uid, principal.teamId);
    if (!factory) throw notFound(`No factory ${uid}.`);
    if (change && factory.source.type === 'FILE') {
      throw fileFactoryConflict(factory, `Factory ${uid} ("${factory.name}")`, change);
    }
    return factory;
  }

  return {
    load,

    async create(principal: AuthenticatedPrincipal, body: FactoryBody): Promise<Factory> {
      return createFactory(manager, principal.teamId, await fieldsOf(body, principal.teamId));
    },

    /** `existing` (from `load(…, 'changed')`) with what `body` sets. */
    async update(
      principal: AuthenticatedPrincipal,
      existing: FactoryWithAgents,
      body: FactoryBody,
    ): Promise<FactoryWithAgents> {
      const factory = await updateFactory(
        manager,
        existing.uid,
        principal.teamId,
        await fieldsOf(body, principal.teamId),
      );
      if (!factory) throw notFound(`No factory ${existing.uid}.`);
      return { ...factory, agents: existing.agents };
    },

    async delete(principal: AuthenticatedPrincipal, uid: string): Promise<void> {
      await load(principal, uid, 'deleted');
      const deleted = await dataSource.transaction((tx) => deleteFactory(tx, uid, principal.teamId));
      if (!deleted) throw notFound(`No factory ${uid}.`);
    },
  };
}

export type FactoryService = ReturnType<typeof createFactoryService>;
