import { parseTicketRef, TICKET_REF_PATTERN, TICKET_REF_RULE } from '../factory-tickets';
import { nonBlankText, notBlank } from './text';
import { resourcePageQuery } from './resource-page-schemas';
import { MAX_PROMPT_CHARS, MAX_TITLE_CHARS } from './run-fields';
import { z } from './zod';
import { agentConfigSchema } from './run-schemas';

/** `POST`/`PUT /agent/factories` bodies: what a factory made through the API sets. */
export const factoryBodySchema = z.strictObject({
  name: nonBlankText(200),
  description: z.string().max(2000).nullish(),
  environment_id: agentConfigSchema.shape.environment_id.nullable(),
});

export type FactoryBody = z.infer<typeof factoryBodySchema>;

/** `POST /agent/factories/validate`: a FACTORY.md's text, and where it would live (to check its name against it). */
export const factoryValidateBodySchema = z.strictObject({
  content: z.string(),
  path: z.string().min(1).max(1000).optional(),
});

/** `GET /factory`: a page of the team's factories, optionally by name. */
export const factoryResourceListQuerySchema = z.strictObject({
  ...resourcePageQuery,
  search: z.string().max(200).optional().openapi({ description: 'Only factories whose name contains it (any case).' }),
  team_uid: z
    .string()
    .max(200)
    .optional()
    .openapi({ description: "A team's uid: the caller's own lists its factories, any other none." }),
});

/** `POST /factory/{uid}/runs`: work for the factory's foreman, for a ticket. */
export const factoryTicketDispatchSchema = z.strictObject({
  prompt: notBlank(z.string().max(MAX_PROMPT_CHARS), 'required (a non-empty prompt: the work for the factory)'),
  title: z
    .string()
    .max(MAX_TITLE_CHARS)
    .optional()
    .openapi({ description: 'The title of the run and of its task; from the prompt when absent.' }),
  ticket_ref: z
    .string()
    .refine((v) => Buffer.byteLength(v) <= 256, 'at most 256 bytes')
    .refine((v) => parseTicketRef(v) !== undefined, TICKET_REF_RULE)
    .optional()
    .openapi({
      pattern: TICKET_REF_PATTERN,
      description:
        "The ticket the work is for, `<source>:<id>` (`linear:REMOTE-123`); stamped on the run's `metadata` as `ticket_source` (in lower case) and `ticket_id`. Absent: an adhoc reference, `adhoc:<run id>`.",
    }),
  ticket_url: z
    .url({ protocol: /^https?$/ })
    .refine((v) => Buffer.byteLength(v) <= 256, 'at most 256 bytes')
    .optional()
    .openapi({ description: "The ticket's URL; stamped on the run's `metadata` as `ticket_url`." }),
});

const TASK_STAGE_VALUES = ['TRIAGE', 'SPEC', 'IMPLEMENT', 'REVIEW', 'COMPLETE', 'CANCELLED'] as const;
const taskStage = z.enum(TASK_STAGE_VALUES);

/** `POST /factory/{uid}/tasks`. */
export const taskCreateSchema = z.strictObject({
  conversation_id: z.string().max(100).openapi({ description: "The conversation the task is bound to (its team's)." }),
  title: nonBlankText(500),
  description: z.string().max(20_000).nullish(),
  stage: taskStage.optional().openapi({ description: 'TRIAGE when absent.' }),
});

/** `PATCH /factory/{uid}/tasks/{task_uid}`: what it names changes; null or "" clears the description. */
export const taskUpdateSchema = z.strictObject({
  title: nonBlankText(500).optional(),
  description: z.string().max(20_000).nullish(),
  stage: taskStage.optional(),
});

const queryDate = z.iso.datetime({ offset: true }).openapi({ description: 'RFC 3339.' });
const repeated = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => String(s).split(','))),
    z.array(item),
  );

/** `GET /factory/{uid}/tasks`. */
export const taskListQuerySchema = z.strictObject({
  ...resourcePageQuery,
  stage: repeated(taskStage).optional().openapi({ description: 'Repeat (or separate with commas) for several.' }),
  q: z.string().max(200).optional().openapi({ description: 'Words in the title or description (any case).' }),
  created_after: queryDate.optional(),
  created_before: queryDate.optional(),
  updated_after: queryDate.optional(),
  created_by: repeated(z.string().max(200))
    .optional()
    .openapi({ description: "Authors' uids or display names (this service keeps no e-mail addresses)." }),
  sort_by: z.enum(['created_at', 'updated_at']).optional(),
  sort_order: z.enum(['asc', 'desc']).optional().openapi({ description: '`desc` (newest first) when absent.' }),
  include_current_run: z.enum(['true', 'false']).optional(),
  full_list: z.enum(['true', 'false']).optional(),
});

export const taskByRunQuerySchema = z.strictObject({ run_id: z.string().max(100) });
export const taskByConversationQuerySchema = z.strictObject({ conversation_id: z.string().max(100) });
