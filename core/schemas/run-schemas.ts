import { jsonSchema, z } from './zod';
import { agentConfigSchema } from './agent-config-schemas';
import { attachmentsSchema } from './attachment-schemas';
import { MAX_PROMPT_CHARS, MAX_TITLE_CHARS, metadataSchema, skillSpecSchema } from './run-fields';
import { NOT_BLANK_PATTERN, notBlank } from './text';

/** Request schemas of the runs API, defined once; validation and the OpenAPI document come from here. */

// Parts shared with other requests, each in a module of its own, importable from here as before.
export { MAX_PROMPT_CHARS, MAX_TITLE_CHARS, metadataSchema, skillSpecSchema } from './run-fields';
export { agentConfigSchema, harnessSchema, mcpServerSchema, mcpServersSchema } from './agent-config-schemas';
export { attachmentsSchema, base64DecodedBytes, isBase64 } from './attachment-schemas';
export {
  CLIENT_ONLY_STATES,
  LIST_RUNS_DEFAULT_LIMIT,
  LIST_RUNS_MAX_LIMIT,
  listRunsQuerySchema,
  MAX_METADATA_FILTERS,
  RUN_SORT_FIELDS,
} from './run-list-schemas';

const idSchema = z.string().min(1).max(128);

/** `mode` as the document shows it: `orchestrate` is recognised, and refused with a pointer to factories. */
export const ORCHESTRATE_REFUSED = {
  enum: ['normal', 'plan'],
  description:
    '`normal` (default) or `plan`; `orchestrate` is 400 `feature_not_available` (send such work to a factory).',
};

export const createRunSchema = z
  .strictObject({
    prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
    title: z.string().max(MAX_TITLE_CHARS).optional(),
    config: agentConfigSchema.optional(),
    skill: skillSpecSchema.optional(),
    metadata: metadataSchema.optional(),
    conversation_id: idSchema.optional(),
    parent_run_id: idSchema.optional(),
    agent_identity_uid: idSchema.optional(),
    attachments: attachmentsSchema.optional(),
    /** Sent by the official clients; every run here is already visible to the caller's team. */
    team: z.boolean().optional(),
    mode: z.enum(['normal', 'plan', 'orchestrate']).optional().openapi(ORCHESTRATE_REFUSED),
    /** A no-op here: every run can be followed live and steered with follow-ups. */
    interactive: z.boolean().optional(),
    on_behalf_of: z.string().min(1).max(320).optional(),
  })
  .superRefine((body, ctx) => {
    const skill = body.skill ?? body.config?.skill_spec;
    if ((body.prompt === undefined || body.prompt.trim() === '') && !skill) {
      ctx.addIssue({
        code: 'custom',
        path: ['prompt'],
        message: 'required (a non-empty prompt, unless a skill is given)',
      });
    }
  })
  .openapi(
    'CreateRunRequest',
    jsonSchema({
      description: 'A non-blank `prompt`, or a skill (`skill` or `config.skill_spec`), or both.',
      anyOf: [
        { required: ['prompt'], properties: { prompt: { pattern: NOT_BLANK_PATTERN } } },
        { required: ['skill'] },
        {
          required: ['config'],
          properties: { config: { $ref: '#/components/schemas/AgentConfig', required: ['skill_spec'] } },
        },
      ],
    }),
  );

export type CreateRunRequest = z.infer<typeof createRunSchema>;

/** `POST /agent/factories/{uid}/runs`: work for a factory's foreman. */
export const factoryDispatchSchema = z.strictObject({
  prompt: notBlank(z.string().max(MAX_PROMPT_CHARS), 'required (a non-empty prompt: the work for the factory)'),
  title: z.string().max(MAX_TITLE_CHARS).optional(),
  metadata: metadataSchema.optional(),
  attachments: attachmentsSchema.optional(),
});

export type FactoryDispatchRequest = z.infer<typeof factoryDispatchSchema>;

export const FOLLOWUP_MODES = ['normal', 'plan', 'orchestrate'] as const;

export const followupSchema = z
  .strictObject({
    message: z.string().min(1).max(MAX_PROMPT_CHARS),
    mode: z.enum(FOLLOWUP_MODES).optional().openapi(ORCHESTRATE_REFUSED),
  })
  .openapi('FollowupRequest');

export type FollowupRequest = z.infer<typeof followupSchema>;
