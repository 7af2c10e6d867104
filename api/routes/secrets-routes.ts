import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { notFound } from '../../core/api-error';
import { MANAGED_SECRET_NAME } from '../../core/managed-secrets';
import { createManagedSecretSchema } from '../../core/schemas/managed-secret-schemas';
import { findManagedSecret, listManagedSecrets, MANAGED_SECRET_ORDER } from '../../db/managed-secret-reads';
import { toManagedSecretItem, type ManagedSecretService } from '../../services/secrets/managed-secret-service';
import { principalOf, requireAdmin } from '../middleware/auth';
import { readResourcePage } from '../resource-page';
import { rejectQueryParameters, validate } from '../validate';

/**
 * A team's managed secrets (`/agent/secrets`): credentials runs use by name (a harness's
 * `harness_auth_secrets`). Write-only: no answer ever carries a value. Admin keys write.
 */
export function createSecretsRouter({
  dataSource,
  secrets,
}: {
  dataSource: DataSource;
  secrets: ManagedSecretService;
}): Router {
  const router = new Router();

  router.post('/agent/secrets', async (ctx) => {
    requireAdmin(ctx.state, 'store secrets');
    rejectQueryParameters(ctx.query);
    const body = validate(createManagedSecretSchema, ctx.state.body);
    const { secret, created } = await secrets.store(principalOf(ctx.state), body);
    ctx.status = created ? 201 : 200;
    ctx.set('Location', `/api/v1/agent/secrets/${secret.name}`);
    ctx.body = toManagedSecretItem(secret);
  });

  router.get('/agent/secrets', async (ctx) => {
    const { rows, page_info } = await readResourcePage(ctx, MANAGED_SECRET_ORDER, (teamId, page) =>
      listManagedSecrets(dataSource.manager, teamId, page),
    );
    ctx.body = { secrets: rows.map(toManagedSecretItem), page_info };
  });

  router.get('/agent/secrets/:name', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const name = ctx.params.name!;
    const secret = MANAGED_SECRET_NAME.test(name)
      ? await findManagedSecret(dataSource.manager, principalOf(ctx.state).teamId, name)
      : null;
    if (!secret) throw notFound(`No secret ${name}.`);
    ctx.body = toManagedSecretItem(secret);
  });

  router.delete('/agent/secrets/:name', async (ctx) => {
    requireAdmin(ctx.state, 'delete secrets');
    rejectQueryParameters(ctx.query);
    await secrets.delete(principalOf(ctx.state), ctx.params.name!);
    ctx.status = 204;
  });

  return router;
}
