import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { isUuid } from '../../core/ids';
import { findWebhook, listDeliveries, listWebhooks, WEBHOOK_ORDER } from '../../db/webhook-reads';
import { invalid, notFound } from '../../core/api-error';
import { principalOf, requireAdmin } from '../middleware/auth';
import { readResourcePage } from '../resource-page';
import {
  cursorNotIssued,
  decodeOpaqueCursor,
  encodeOpaqueCursor,
  parseLimit,
  singleQueryParameter,
} from '../page-params';
import { createWebhookSchema } from '../../core/schemas/webhook-schemas';
import { rejectQueryParameters, validate } from '../validate';
import type { WebhookService } from '../../services/webhooks/webhook-service';
import { toDeliveryItem, toWebhookItem } from '../webhook-item';

const DELIVERIES_PAGE_DEFAULT = 20;
const DELIVERIES_PAGE_MAX = 100;

/**
 * A team's webhooks (`/agent/webhooks`) and their delivery logs. Deliveries are made by the
 * workers (activities/webhook-activities.ts); another team's webhook is 404 on every route.
 */
export function createWebhooksRouter({
  dataSource,
  webhooks,
}: {
  dataSource: DataSource;
  webhooks: WebhookService;
}): Router {
  const router = new Router();

  const load = async (id: string, teamId: string) => {
    const webhook = isUuid(id) ? await findWebhook(dataSource.manager, id, teamId) : null;
    if (!webhook) throw notFound(`No webhook ${id}.`);
    return webhook;
  };

  router.post('/agent/webhooks', async (ctx) => {
    requireAdmin(ctx.state, 'subscribe webhooks');
    rejectQueryParameters(ctx.query);
    const body = validate(createWebhookSchema, ctx.state.body);
    const { webhook, secret } = await webhooks.create(principalOf(ctx.state), body);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/webhooks/${webhook.id}`);
    ctx.body = { ...toWebhookItem(webhook), secret };
  });

  router.get('/agent/webhooks', async (ctx) => {
    const { rows, page_info } = await readResourcePage(ctx, WEBHOOK_ORDER, (teamId, page) =>
      listWebhooks(dataSource.manager, teamId, page),
    );
    ctx.body = { webhooks: rows.map(toWebhookItem), page_info };
  });

  router.get('/agent/webhooks/:id', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = toWebhookItem(await load(ctx.params.id!, principalOf(ctx.state).teamId));
  });

  router.delete('/agent/webhooks/:id', async (ctx) => {
    requireAdmin(ctx.state, 'delete webhooks');
    rejectQueryParameters(ctx.query);
    await webhooks.delete(principalOf(ctx.state), ctx.params.id!);
    ctx.status = 204;
  });

  router.get('/agent/webhooks/:id/deliveries', async (ctx) => {
    rejectQueryParameters(ctx.query, ['limit', 'cursor']);
    const limit = parseLimit(ctx.query, DELIVERIES_PAGE_DEFAULT, DELIVERIES_PAGE_MAX);
    const webhook = await load(ctx.params.id!, principalOf(ctx.state).teamId);
    const cursor = singleQueryParameter(ctx.query, 'cursor');
    const beforeEventId = cursor === undefined ? undefined : decodeDeliveriesCursor(cursor, webhook.id);
    const { deliveries, hasMore } = await listDeliveries(dataSource.manager, webhook.id, { limit, beforeEventId });
    const last = deliveries[deliveries.length - 1];
    ctx.body = {
      deliveries: deliveries.map(toDeliveryItem),
      page_info: {
        has_next_page: hasMore,
        ...(hasMore && last ? { next_cursor: encodeOpaqueCursor({ w: webhook.id, e: last.eventId }) } : {}),
      },
    };
  });

  return router;
}

/** The event id a page of deliveries continues before. */
function decodeDeliveriesCursor(cursor: string, webhookId: string): string {
  const payload = decodeOpaqueCursor(cursor);
  // Compared in SQL as a bigint: a forged value must not reach the query.
  if (typeof payload.w !== 'string' || typeof payload.e !== 'string' || !/^\d{1,18}$/.test(payload.e)) {
    throw cursorNotIssued();
  }
  if (payload.w !== webhookId) {
    throw invalid('Query parameter `cursor` was issued for another webhook; use it with that webhook.');
  }
  return payload.e;
}
