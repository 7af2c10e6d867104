import Router from '@koa/router';
import type { DataSource } from 'typeorm';
import {
  taskByConversationQuerySchema,
  taskByRunQuerySchema,
  taskCreateSchema,
  taskListQuerySchema,
  taskUpdateSchema,
} from '../../core/schemas/factory-schemas';
import { notFound } from '../../core/api-error';
import { findFactory } from '../../db/factory-reads';
import { listTasks, TASK_ORDERS } from '../../db/factory-task-reads';
import type { KeysetOrder } from '../../db/keyset-reads';
import type { FactoryTasksService } from '../../services/factories/factory-tasks';
import { principalOf } from '../middleware/auth';
import { resourcePageInfo, resourcePageOf } from '../resource-page';
import { rejectQueryParameters, storablePathId, validate } from '../validate';

/** A factory's task board: `/factory/{uid}/tasks`, `task-by-run`, `task-by-conversation`. */
export function createFactoryTaskRouter({
  dataSource,
  tasks,
}: {
  dataSource: DataSource;
  tasks: FactoryTasksService;
}): Router {
  const router = new Router();
  router.param('uid', storablePathId('factory'));
  router.param('taskUid', storablePathId('task'));

  router.post('/factory/:uid/tasks', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(taskCreateSchema, ctx.state.body);
    const task = await tasks.create(principalOf(ctx.state), ctx.params.uid!, body);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/factory/${ctx.params.uid!}/tasks/${task.uid}`);
    ctx.body = task;
  });

  router.get('/factory/:uid/tasks', async (ctx) => {
    const query = validate(taskListQuerySchema, ctx.query, 'query');
    const principal = principalOf(ctx.state);
    const factoryUid = ctx.params.uid!;
    if (!(await findFactory(dataSource.manager, factoryUid, principal.teamId)))
      throw notFound(`No factory ${factoryUid}.`);
    const base = TASK_ORDERS[query.sort_by ?? 'created_at'];
    const order: KeysetOrder = { ...base, direction: query.sort_order === 'asc' ? 'ASC' : 'DESC' };
    const sort = `${order.column}:${order.direction}`;
    const page = await listTasks(
      dataSource.manager,
      factoryUid,
      {
        stages: query.stage,
        q: query.q,
        createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        createdBefore: query.created_before ? new Date(query.created_before) : undefined,
        updatedAfter: query.updated_after ? new Date(query.updated_after) : undefined,
        createdBy: query.created_by,
      },
      order,
      resourcePageOf(query, sort, order),
    );
    const detail = { currentRun: query.include_current_run === 'true', full: query.full_list === 'true' };
    const shown = [];
    for (const task of page.rows) shown.push(await tasks.view(task, detail));
    ctx.body = { tasks: shown, page_info: resourcePageInfo(page, sort) };
  });

  router.get('/factory/:uid/tasks/:taskUid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = await tasks.get(principalOf(ctx.state), ctx.params.uid!, ctx.params.taskUid!);
  });

  router.patch('/factory/:uid/tasks/:taskUid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    const body = validate(taskUpdateSchema, ctx.state.body ?? {});
    ctx.body = await tasks.update(principalOf(ctx.state), ctx.params.uid!, ctx.params.taskUid!, body);
  });

  router.delete('/factory/:uid/tasks/:taskUid', async (ctx) => {
    rejectQueryParameters(ctx.query);
    await tasks.remove(principalOf(ctx.state), ctx.params.uid!, ctx.params.taskUid!);
    ctx.status = 204;
  });

  router.post('/factory/:uid/tasks/:taskUid/cancel', async (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.body = await tasks.cancel(principalOf(ctx.state), ctx.params.uid!, ctx.params.taskUid!);
  });

  router.get('/factory/:uid/task-by-run', async (ctx) => {
    const { run_id } = validate(taskByRunQuerySchema, ctx.query, 'query');
    ctx.body = await tasks.byRun(principalOf(ctx.state), ctx.params.uid!, run_id);
  });

  router.get('/factory/:uid/task-by-conversation', async (ctx) => {
    const { conversation_id } = validate(taskByConversationQuerySchema, ctx.query, 'query');
    ctx.body = await tasks.byConversation(principalOf(ctx.state), ctx.params.uid!, conversation_id);
  });
  return router;
}
