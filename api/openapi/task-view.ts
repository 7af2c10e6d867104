import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { listRunsQuerySchema } from '../../core/schemas/run-list-schemas';
import { z } from '../../core/schemas/zod';
import type { toTaskItem } from '../../services/views/task-item';
import { pageInfoSchema, registerOperation, timestamp } from './common';
import type { Fits } from './fits';

/** A run as the oldest official client reads it (services/views/task-item.ts). */
const taskItemSchema = z
  .object({
    task_id: z.uuid().openapi({ description: 'The run id.' }),
    title: z.string(),
    prompt: z.string(),
    state: z
      .enum(['QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED'])
      .openapi({ description: 'ERROR and CANCELLED runs are FAILED here; `status_message` says which.' }),
    created_at: timestamp(),
    updated_at: timestamp(),
    agent_config: z.record(z.string(), z.unknown()),
    creator: z.object({ uid: z.string(), type: z.enum(['user', 'service_account']) }),
    session_id: z.string().optional(),
    session_link: z.string().optional(),
    source: z.enum(['LINEAR', 'API', 'SLACK', 'LOCAL', 'SCHEDULED_AGENT']).optional(),
    status_message: z.object({ message: z.string() }).optional(),
  })
  .openapi('TaskItem');

export type TaskItemFits = Fits<typeof taskItemSchema, ReturnType<typeof toTaskItem>>;

/** `/agent/tasks`: runs for the oldest official client (`warp-sdk` 0.1.1). */
export function registerTaskViewOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/tasks',
    operationId: 'listTasks',
    summary: 'List runs as tasks (the oldest official client)',
    description:
      'As `GET /agent/runs`, newest first by creation unless `sort_by` says otherwise; `state=FAILED` also matches ERROR and CANCELLED runs.',
    tags: ['Runs'],
    deprecated: true,
    query: listRunsQuerySchema,
    responses: [
      {
        status: 200,
        description: 'A page of runs as tasks.',
        schema: z.object({ tasks: z.array(taskItemSchema), page_info: pageInfoSchema }),
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/tasks/{taskId}',
    operationId: 'getTask',
    summary: 'Get a run as a task (the oldest official client)',
    tags: ['Runs'],
    deprecated: true,
    params: z.object({ taskId: z.uuid().openapi({ param: { description: 'The run id.' } }) }),
    responses: [{ status: 200, description: 'The run as a task.', schema: taskItemSchema }],
    errors: [400, 404],
  });
}
