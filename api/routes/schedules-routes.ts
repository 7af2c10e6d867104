import Router from '@koa/router';
import { SCHEDULE_ORDER } from '../../db/schedule-reads';
import { z } from 'zod';
import { principalOf } from '../middleware/auth';
import { readResourcePage } from '../resource-page';
import type { createScheduleService } from '../../services/schedules/schedule-service';
import { createScheduleSchema, updateScheduleSchema } from '../../core/schemas/schedule-schemas';
import { rejectQueryParameters, validate } from '../validate';

const emptyBodySchema = z.strictObject({});

/** The seven schedule endpoints, as the official clients call them. */
export function createSchedulesRouter({
  scheduleService,
}: {
  scheduleService: ReturnType<typeof createScheduleService>;
}): Router {
  const router = new Router();

  router.post('/agent/schedules', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(createScheduleSchema, ctx.state.body);
    const item = await scheduleService.create(principalOf(ctx.state), body);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/agent/schedules/${item.id}`);
    ctx.body = item;
  });

  router.get('/agent/schedules', async (ctx) => {
    const { rows, page_info } = await readResourcePage(ctx, SCHEDULE_ORDER, (_teamId, page) =>
      scheduleService.list(principalOf(ctx.state), page),
    );
    ctx.body = { schedules: rows, page_info };
  });

  router.get('/agent/schedules/:scheduleId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = await scheduleService.get(principalOf(ctx.state), ctx.params.scheduleId!);
  });

  router.put('/agent/schedules/:scheduleId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(updateScheduleSchema, ctx.state.body);
    ctx.body = await scheduleService.update(principalOf(ctx.state), ctx.params.scheduleId!, body);
  });

  router.delete('/agent/schedules/:scheduleId', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await scheduleService.delete(principalOf(ctx.state), ctx.params.scheduleId!);
    ctx.body = { success: true };
  });

  for (const [action, enabled] of [
    ['pause', false],
    ['resume', true],
  ] as const) {
    router.post(`/agent/schedules/:scheduleId/${action}`, async (ctx) => {
      rejectQueryParameters(ctx.query);
      validate(emptyBodySchema, ctx.state.body);
      ctx.body = await scheduleService.setEnabled(principalOf(ctx.state), ctx.params.scheduleId!, enabled);
    });
  }

  return router;
}
