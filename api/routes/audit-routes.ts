import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import { AUDIT_EVENT_ORDER, readAuditEventPage } from '../../db/audit-event-reads';
import { AUDIT_PAGE_DEFAULT, auditEventsQuerySchema } from '../../core/schemas/audit-schemas';
import { auditEventItem } from '../../services/audit/audit-event-item';
import { principalOf, requireAdmin } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import { validate } from '../validate';

/** `GET /audit-events`: the caller's team's audit log, newest first; admin keys only. */
export function createAuditRouter({ dataSource }: { dataSource: DataSource }): Router {
  const router = new Router();
  router.get('/audit-events', async (ctx) => {
    requireAdmin(ctx.state, 'read the audit log');
    const query = validate(auditEventsQuerySchema, ctx.query, 'query');
    const page = resourcePageOf(
      { ...query, limit: query.limit ?? AUDIT_PAGE_DEFAULT },
      'occurred_at',
      AUDIT_EVENT_ORDER,
    );
    const filters = {
      action: query.action,
      actorUid: query.actor_uid,
      resourceId: query.resource_id,
      createdAfter: query.created_after ? new Date(query.created_after) : undefined,
      createdBefore: query.created_before ? new Date(query.created_before) : undefined,
    };
    const events = await readAuditEventPage(dataSource.manager, principalOf(ctx.state).teamId, filters, page);
    ctx.body = { events: events.rows.map(auditEventItem), page_info: resourcePageInfo(events, 'occurred_at') };
  });
  return router;
}
