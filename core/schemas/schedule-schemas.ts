import { CRON_FORMAT_HINT, CRON_PATTERN, cronProblem } from '../cron';
import { agentConfigSchema, FOLLOWUP_MODES, MAX_PROMPT_CHARS, metadataSchema } from './run-schemas';
import { NOT_BLANK_PATTERN, notBlank } from './text';
import { jsonSchema, z } from './zod';

/** Request schemas of the schedules API (`/agent/schedules`). */

const CRON_RE = new RegExp(CRON_PATTERN);

export const cronScheduleSchema = z
  .string()
  .max(200)
  .superRefine((value, ctx) => {
    // cronProblem says what to fix; the pattern, which the document states, says the same in one expression.
    const problem = cronProblem(value) ?? (CRON_RE.test(value) ? undefined : `expected ${CRON_FORMAT_HINT}`);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .openapi('CronSchedule', {
    description: `${CRON_FORMAT_HINT[0]!.toUpperCase()}${CRON_FORMAT_HINT.slice(1)}. Fields take numbers (month and day of week also names such as JAN or MON), "*", ranges that do not run backwards ("1-5", "MON-FRI"), lists ("1,15") and steps ("*/10", "9-17/2").`,
    pattern: CRON_PATTERN,
    example: '0 9 * * 1-5',
  });

const definitionFields = {
  name: notBlank(z.string().max(200), 'must not be empty'),
  cron_schedule: cronScheduleSchema,
  prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
  agent_config: agentConfigSchema.optional(),
  /** The agent identity each run executes as: like `agent_identity_uid` on a run. */
  agent_uid: z.string().min(1).max(128).optional(),
  metadata: metadataSchema.optional(),
  mode: z
    .enum(FOLLOWUP_MODES)
    .optional()
    .openapi({ enum: ['normal'], description: 'Only `normal`: other modes are 400 `feature_not_available`.' }),
};

function requirePromptOrSkill(
  body: { prompt?: string; agent_config?: { skill_spec?: string } },
  ctx: z.core.$RefinementCtx,
): void {
  if ((body.prompt === undefined || body.prompt.trim() === '') && !body.agent_config?.skill_spec) {
    ctx.addIssue({
      code: 'custom',
      path: ['prompt'],
      message: 'required (a non-empty prompt, unless `agent_config.skill_spec` is given)',
    });
  }
}

/** requirePromptOrSkill, for the document. */
const PROMPT_OR_SKILL = jsonSchema({
  description: 'A non-blank `prompt`, or `agent_config.skill_spec`, or both.',
  anyOf: [
    { required: ['prompt'], properties: { prompt: { pattern: NOT_BLANK_PATTERN } } },
    {
      required: ['agent_config'],
      properties: { agent_config: { $ref: '#/components/schemas/AgentConfig', required: ['skill_spec'] } },
    },
  ],
});

export const createScheduleSchema = z
  .strictObject({
    ...definitionFields,
    enabled: z.boolean().optional(),
    /** Sent by the official clients; every schedule here belongs to the caller's team. */
    team: z.boolean().optional(),
  })
  .superRefine(requirePromptOrSkill)
  .openapi('CreateScheduleRequest', PROMPT_OR_SKILL);

/** `PUT` replaces the whole definition: fields left out are cleared. */
export const updateScheduleSchema = z
  .strictObject({ ...definitionFields, enabled: z.boolean() })
  .superRefine(requirePromptOrSkill)
  .openapi('ReplaceScheduleRequest', PROMPT_OR_SKILL);

export type CreateScheduleRequest = z.infer<typeof createScheduleSchema>;
export type UpdateScheduleRequest = z.infer<typeof updateScheduleSchema>;
