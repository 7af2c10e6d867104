import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import {
  taskByConversationQuerySchema,
  taskByRunQuerySchema,
  taskCreateSchema,
  taskListQuerySchema,
  taskUpdateSchema,
} from '../../core/schemas/factory-schemas';
import { resourcePageInfoSchema } from '../../core/schemas/resource-page-schemas';
import { RUN_STATES } from '../../core/run-state';
import { z } from '../../core/schemas/zod';
import { TASK_STAGES } from '../../db/factory-task-reads';
import type { FactoryTasksService } from '../../services/factories/factory-tasks';
import { locationHeader, registerOperation, timestamp } from './common';
import type { Fits } from './fits';
import { artifactItemSchema } from './run-responses';

const tags = ['Factories'];

/** A task (services/factories/factory-tasks.ts `view`). */
const taskSchema = z
  .object({
    uid: z.string(),
    factory_uid: z.string(),
    conversation_id: z.string(),
    run_id: z.string().openapi({ description: "The newest run of the task's conversation." }),
    title: z.string(),
    description: z.string().optional(),
    stage: z.enum(TASK_STAGES),
    author: z.object({ uid: z.string(), display_name: z.string() }),
    created_at: timestamp(),
    updated_at: timestamp(),
    current_run: z
      .object({ run_id: z.uuid(), state: z.enum(RUN_STATES), is_run_type_cancellable: z.boolean() })
      .optional()
      .openapi({ description: 'On get, and in lists with `include_current_run=true`.' }),
    ticket_id: z.string().optional().openapi({
      description:
        "The ticket of the task's work (`metadata.ticket_id` of its first run that has one); on single reads and `full_list=true`.",
    }),
    ticket_source: z.string().optional().openapi({
      description: "Where that ticket lives (the run's `metadata.ticket_source`, e.g. `linear`, or `adhoc`).",
    }),
    outputs: z
      .array(artifactItemSchema)
      .optional()
      .openapi({ description: "The conversation's artifacts, newest first (get, and lists with `full_list=true`)." }),
  })
  .openapi('FactoryTask');

export type FactoryTaskFits = Fits<typeof taskSchema, Awaited<ReturnType<FactoryTasksService['view']>>>;

const params = z.object({ uid: z.string().openapi({ param: { description: 'The factory uid.' } }) });
const taskParams = params.extend({ taskUid: z.string().openapi({ param: { description: 'The task uid.' } }) });
const one = (description: string) => [{ status: 200 as const, description, schema: taskSchema }];

export function registerFactoryTaskOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/factory/{uid}/tasks',
    operationId: 'createFactoryTask',
    summary: 'Create a task bound to a conversation',
    description:
      "The conversation must be one of your team's; it may be bound to one live task at most (409 otherwise; deleting the task frees it).",
    tags,
    params,
    body: { schema: taskCreateSchema },
    responses: [{ status: 201, description: 'The task.', schema: taskSchema, headers: locationHeader }],
    errors: [400, 404, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory/{uid}/tasks',
    operationId: 'listFactoryTasks',
    summary: "List a factory's tasks",
    tags,
    params,
    query: taskListQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The tasks, newest first unless `sort_order=asc`.',
        schema: z.object({ tasks: z.array(taskSchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory/{uid}/tasks/{taskUid}',
    operationId: 'getFactoryTask',
    summary: 'Get a task, with its outputs',
    tags,
    params: taskParams,
    responses: one('The task.'),
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'patch',
    path: '/api/v1/factory/{uid}/tasks/{taskUid}',
    operationId: 'updateFactoryTask',
    summary: "Change a task's title, description or stage",
    description: 'Fields not sent keep their values; any stage may follow any other (last write wins).',
    tags,
    params: taskParams,
    body: { schema: taskUpdateSchema },
    responses: one('The task.'),
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/factory/{uid}/tasks/{taskUid}',
    operationId: 'deleteFactoryTask',
    summary: 'Delete a task (its conversation and artifacts stay)',
    tags,
    params: taskParams,
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/factory/{uid}/tasks/{taskUid}/cancel',
    operationId: 'cancelFactoryTask',
    summary: "Cancel a task's run and move it to CANCELLED",
    description: "Cancels the task's current top-level run when it is still going (its descendants with it).",
    tags,
    params: taskParams,
    responses: one('The task.'),
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory/{uid}/task-by-run',
    operationId: 'getFactoryTaskByRun',
    summary: 'The task that owns a run (through its root run)',
    tags,
    params,
    query: taskByRunQuerySchema,
    responses: one('The task.'),
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/factory/{uid}/task-by-conversation',
    operationId: 'getFactoryTaskByConversation',
    summary: 'The task bound to a conversation',
    tags,
    params,
    query: taskByConversationQuerySchema,
    responses: one('The task.'),
    errors: [400, 404],
  });
}
