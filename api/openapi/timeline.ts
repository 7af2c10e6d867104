import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import type { runTimeline } from '../../services/views/run-timeline';
import { registerOperation, timestamp } from './common';
import type { Fits } from './fits';

/** `GET /agent/runs/{id}/timeline` (services/views/run-timeline.ts). */
const timelineSchema = z
  .object({
    events: z.array(
      z.object({
        event_type: z.enum([
          'oz_run_created',
          'oz_run_claimed',
          'oz_run_blocked',
          'worker_container_ready',
          'agent_started',
          'oz_run_done',
          'oz_run_cancelled',
          'oz_run_failed',
          'oz_run_errored',
        ]),
        event_uuid: z.uuid().openapi({ description: 'Stable: the same event has the same id on every read.' }),
        occurred_at: timestamp(),
        run_id: z.uuid(),
        execution_id: z.number().int().openapi({ description: 'The turn of the run the event belongs to.' }),
        payload: z.record(z.string(), z.unknown()).openapi({
          description:
            "By event: `oz_run_created` `{source}`; the others `{turn, ...}`: `worker_container_ready` adds `message` (the workspace, as the transcript says it) and, when the workspace runs on its environment's image, `image_reference` and `image_digest` (`sha256:…`, what it runs on); `agent_started` adds `model_id` and `environment_id` when the agent was set up; `oz_run_blocked` adds `status_message` (what waits for a person) and `approval_id`; an ending adds `state` and `status_message`.",
        }),
      }),
    ),
  })
  .openapi('RunTimeline');

export function registerTimelineOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/runs/{runId}/timeline',
    operationId: 'getRunTimeline',
    summary: "The run's lifecycle events, in order",
    description:
      'Created; then per turn: claimed (in progress), its workspace ready (when the turn made one, with the image digest it runs on), the agent started, and how the turn ended.',
    tags: ['Runs'],
    params: z.object({ runId: z.uuid().openapi({ param: { description: 'The run id.' } }) }),
    responses: [{ status: 200, description: 'The timeline.', schema: timelineSchema }],
    errors: [400, 404],
  });
}

export type TimelineFits = Fits<typeof timelineSchema, ReturnType<typeof runTimeline>>;
