import { z } from 'zod';
import { cronProblem } from '../../core/cron';
import { agentConfigSchema, FOLLOWUP_MODES, MAX_PROMPT_CHARS, metadataSchema } from './run-schemas';

/** Request schemas of the schedules API (`/agent/schedules`). */

export const cronScheduleSchema = z
  .string()
  .max(200)
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const definitionFields = {
  name: z
    .string()
    .max(200)
    .refine((name) => name.trim() !== '', 'must not be empty'),
  cron_schedule: cronScheduleSchema,
  prompt: z.string().max(MAX_PROMPT_CHARS).optional(),
  agent_config: agentConfigSchema.optional(),
  /** The agent identity each run executes as: like `agent_identity_uid` on a run. */
  agent_uid: z.string().min(1).max(128).optional(),
  metadata: metadataSchema.optional(),
  mode: z.enum(FOLLOWUP_MODES).optional(),
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

export const createScheduleSchema = z
  .strictObject({
    ...definitionFields,
    enabled: z.boolean().optional(),
    /** Sent by the official clients; every schedule here belongs to the caller's team. */
    team: z.boolean().optional(),
  })
  .superRefine(requirePromptOrSkill);

/** `PUT` replaces the whole definition: fields left out are cleared. */
export const updateScheduleSchema = z
  .strictObject({ ...definitionFields, enabled: z.boolean() })
  .superRefine(requirePromptOrSkill);

export type CreateScheduleRequest = z.infer<typeof createScheduleSchema>;
export type UpdateScheduleRequest = z.infer<typeof updateScheduleSchema>;
