import Router from '@koa/router';
import { ApiError, notFound } from '../../core/api-error';
import { FORGE_KINDS, type ForgeKind } from '../../core/git-forges';
import { MAX_FORGE_WEBHOOK_BYTES } from '../../core/forge-webhooks';
import type { createForgeWebhookService } from '../../services/pull-requests/forge-webhook-service';
import { readBody } from '../middleware/json-body';
import { rejectQueryParameters } from '../validate';

export const FORGE_WEBHOOKS_PREFIX = '/api/v1/forge-webhooks';

/**
 * `POST /forge-webhooks/{github|gitlab|gitea}`: a forge's pull request webhook. Open (no API key:
 * the forge signs it with FORGE_WEBHOOK_SECRETS instead), counted per client address like every
 * open route (app.ts), its raw body at most MAX_FORGE_WEBHOOK_BYTES. Not in the audit log: it has
 * no principal and no team; what it changes is recorded as the run's `pull_request` event.
 */
export function createForgeWebhooksRouter({
  forgeWebhooks,
}: {
  forgeWebhooks: ReturnType<typeof createForgeWebhookService>;
}): Router {
  const router = new Router({ prefix: FORGE_WEBHOOKS_PREFIX });
  router.post('/:forge', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const forge = ctx.params.forge!;
    if (!(FORGE_KINDS as readonly string[]).includes(forge)) {
      throw notFound(`No forge webhook endpoint for "${forge}": use one of ${FORGE_KINDS.join(', ')}.`);
    }
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > MAX_FORGE_WEBHOOK_BYTES) throw tooLarge();
    const raw = await readBody(ctx.req, MAX_FORGE_WEBHOOK_BYTES);
    const outcome = await forgeWebhooks.receive(forge as ForgeKind, ctx.headers, raw);
    ctx.status = outcome.result === 'recorded' && outcome.matched > 0 ? 200 : 202;
    ctx.body = outcome;
  });
  return router;
}

function tooLarge(): ApiError {
  return new ApiError('invalid_request', `The body is larger than the limit of ${MAX_FORGE_WEBHOOK_BYTES} bytes.`, {
    status: 413,
  });
}
