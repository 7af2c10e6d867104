import { jsonSchema, z } from './zod';
import { RUN_SOURCES, RUN_STATES, TASK_STATUSES } from '../run-state';
import { ARTIFACT_TYPES } from '../artifact-types';
import { METADATA_KEY_RE, skillSpecSchema } from './run-fields';

/** States the official clients know; valid in a filter even where this service never uses them. */
export const CLIENT_ONLY_STATES = ['PENDING', 'CLAIMED'] as const;
export const RUN_SORT_FIELDS = ['updated_at', 'created_at', 'title', 'agent'] as const;
export const LIST_RUNS_DEFAULT_LIMIT = 20;
export const LIST_RUNS_MAX_LIMIT = 100;
export const MAX_METADATA_FILTERS = 5;
const rfc3339 = z.string().optional().openapi({ format: 'date-time', description: 'An RFC 3339 timestamp.' });

/**
 * The query of `GET /agent/runs`. api/list-runs-query.ts parses it (repeated `state`, the
 * `metadata[KEY]` pairs, cursors bound to their filters) and accepts exactly these parameters.
 */
export const listRunsQuerySchema = z.strictObject({
  state: z
    .array(z.enum([...RUN_STATES, ...CLIENT_ONLY_STATES]))
    .optional()
    .openapi({ description: 'Repeatable: `state=QUEUED&state=INPROGRESS`.' }),
  task_status: z.array(z.enum(TASK_STATUSES)).optional().openapi({
    description:
      'Repeatable, any of them: `running` (the run or a descendant is QUEUED or INPROGRESS), `failed` (FAILED or ERROR), `blocked`, `cancelled`, `complete` (SUCCEEDED).',
  }),
  name: z.string().optional().openapi({ description: 'Exact match on `agent_config.name`.' }),
  model_id: z.string().optional().openapi({ description: 'Exact match on `agent_config.model_id`.' }),
  creator: z.string().optional().openapi({ description: "The creator's uid." }),
  source: z.enum(RUN_SOURCES).optional(),
  schedule_id: z.string().optional().openapi({ description: 'Runs created by that schedule.' }),
  ancestor_run_id: z
    .string()
    .optional()
    .openapi({ description: 'Every run below that run (its children, theirs, …).' }),
  factory_uid: z.string().optional().openapi({ description: 'Runs executed by an agent of that factory.' }),
  environment_id: z
    .string()
    .optional()
    .openapi({ description: '`empty-environment` selects runs without an environment.' }),
  skill_spec: skillSpecSchema.optional().openapi({ description: 'Runs started from that skill.' }),
  skill: skillSpecSchema.optional().openapi({ description: 'Alias of `skill_spec`.' }),
  created_after: rfc3339,
  created_before: rfc3339,
  updated_after: rfc3339,
  q: z
    .string()
    .max(1000)
    .optional()
    .openapi({ description: 'Case-insensitive substring of title, prompt or skill spec.' }),
  metadata: z
    .record(z.string().regex(METADATA_KEY_RE), z.string())
    .optional()
    .openapi(
      jsonSchema({
        description: '`metadata[KEY]=VALUE`, up to 5 pairs; all must match.',
        propertyNames: { pattern: METADATA_KEY_RE.source },
        maxProperties: MAX_METADATA_FILTERS,
        param: { style: 'deepObject', explode: true },
      }),
    ),
  artifact_type: z
    .enum(ARTIFACT_TYPES)
    .optional()
    .openapi({ description: 'Runs with at least one artifact of that type.' }),
  sort_by: z.enum(RUN_SORT_FIELDS).optional().openapi({
    default: 'updated_at',
    description: '`agent` sorts by the skill (`skill_spec`), runs without one last in either order.',
  }),
  sort_order: z.enum(['asc', 'desc']).optional().openapi({ default: 'desc' }),
  limit: z.number().int().min(1).max(LIST_RUNS_MAX_LIMIT).optional().openapi({ default: LIST_RUNS_DEFAULT_LIMIT }),
  cursor: z.string().optional().openapi({ description: '`page_info.next_cursor` of the previous page.' }),
});
