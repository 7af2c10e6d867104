import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { createScheduleSchema, updateScheduleSchema } from '../../core/schemas/schedule-schemas';
import { z } from '../../core/schemas/zod';
import { linksTo, locationHeader, registerOperation, timestamp } from './common';
import { agentConfigViewSchema } from './run-responses';
import type { ScheduledAgentItem } from '../../services/schedules/schedule-service';
import type { Fits } from './fits';
import { resourcePageInfoSchema, resourcePageQuerySchema } from '../../core/schemas/resource-page-schemas';

const tags = ['Schedules'];

const actorSchema = z.object({ uid: z.string(), display_name: z.string(), type: z.string() });

/** `ScheduledAgentItem` (api/schedule-service.ts `toScheduleItem`). */
const scheduleSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    cron_schedule: z.string(),
    enabled: z.boolean(),
    prompt: z.string(),
    created_at: timestamp(),
    updated_at: timestamp(),
    agent_config: agentConfigViewSchema,
    agent_uid: z.string().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    created_by: actorSchema,
    updated_by: actorSchema,
    scope: z.object({ type: z.literal('Team'), uid: z.string() }),
    history: z.object({ last_ran: timestamp().optional(), next_run: timestamp().optional() }),
    last_spawn_error: z.string().optional(),
  })
  .openapi('Schedule');

const idParams = z.object({ scheduleId: z.uuid().openapi({ param: { description: 'The schedule id.' } }) });
const emptyBody = {
  schema: z.strictObject({}).openapi({ description: 'No fields; the body may be omitted.' }),
  required: false,
};

export function registerScheduleOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/agent/schedules',
    operationId: 'createSchedule',
    summary: 'Create a schedule',
    description: 'The run each firing asks for is checked now, as `POST /agent/runs` would check it.',
    tags,
    body: { schema: createScheduleSchema },
    responses: [
      {
        status: 201,
        description: 'The schedule.',
        schema: scheduleSchema,
        headers: locationHeader,
        links: linksTo('/id', 'scheduleId', [
          'getSchedule',
          'replaceSchedule',
          'deleteSchedule',
          'pauseSchedule',
          'resumeSchedule',
        ]),
      },
    ],
    errors: [400, 403, 404, 409],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/schedules',
    operationId: 'listSchedules',
    summary: "List your team's schedules",
    tags,
    query: resourcePageQuerySchema,
    responses: [
      {
        status: 200,
        description: 'The schedules, newest first.',
        schema: z.object({ schedules: z.array(scheduleSchema), page_info: resourcePageInfoSchema }),
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/schedules/{scheduleId}',
    operationId: 'getSchedule',
    summary: 'Get a schedule',
    tags,
    params: idParams,
    responses: [{ status: 200, description: 'The schedule.', schema: scheduleSchema }],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'put',
    path: '/api/v1/agent/schedules/{scheduleId}',
    operationId: 'replaceSchedule',
    summary: 'Replace a schedule',
    description: 'Replaces the whole definition: fields left out are cleared.',
    tags,
    params: idParams,
    body: { schema: updateScheduleSchema },
    responses: [{ status: 200, description: 'The schedule.', schema: scheduleSchema }],
    errors: [400, 403, 404, 409],
  });
  registerOperation(registry, {
    method: 'delete',
    path: '/api/v1/agent/schedules/{scheduleId}',
    operationId: 'deleteSchedule',
    summary: 'Delete a schedule',
    tags,
    params: idParams,
    responses: [{ status: 200, description: 'Deleted.', schema: z.object({ success: z.literal(true) }) }],
    errors: [400, 404],
  });
  for (const [action, summary] of [
    ['pause', 'Pause a schedule'],
    ['resume', 'Resume a schedule'],
  ] as const) {
    registerOperation(registry, {
      method: 'post',
      path: `/api/v1/agent/schedules/{scheduleId}/${action}`,
      operationId: `${action}Schedule`,
      summary,
      tags,
      params: idParams,
      body: emptyBody,
      responses: [{ status: 200, description: 'The schedule.', schema: scheduleSchema }],
      errors: [400, 404],
    });
  }
}

/** What api/schedule-service.ts builds is what the document says a schedule is. */
export type ScheduleFits = Fits<typeof scheduleSchema, ScheduledAgentItem>;
