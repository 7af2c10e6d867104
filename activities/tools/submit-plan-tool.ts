import type { ToolSpec } from '../model/types';
import { optionalText, stringArg, ToolInputError } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

/** The built-in tool a turn in plan mode ends with (offered only in plan mode). */
export const SUBMIT_PLAN_TOOL = 'submit_plan';

/** The largest plan, in characters (as a prompt). */
export const MAX_PLAN_CHARS = 100_000;

export const SUBMIT_PLAN_SPEC: ToolSpec = {
  name: SUBMIT_PLAN_TOOL,
  description:
    'Submit your plan for the user to approve. This ends your turn; the user answers with approval or changes. Submitting again revises the same plan (its next version).',
  parameters: {
    type: 'object',
    properties: {
      title: { type: 'string', description: 'A short title for the plan (at most 200 characters).' },
      markdown: {
        type: 'string',
        description: `The whole plan in markdown: the steps, the files they touch, how to check the result (at most ${MAX_PLAN_CHARS} characters).`,
      },
    },
    required: ['title', 'markdown'],
    additionalProperties: false,
  },
};

/** `submit_plan`: records the next version of the run's plan (once per tool call, however often it is retried). */
export async function submitPlan(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  if (!ctx.recordPlan) throw new ToolInputError('submit_plan is only available in plan mode');
  const title = optionalText(args, 'title', 200);
  if (!title?.trim()) throw new ToolInputError('`title` must be a non-empty string');
  const markdown = stringArg(args, 'markdown');
  if (!markdown.trim()) throw new ToolInputError('`markdown` must be the plan, not empty');
  if (markdown.length > MAX_PLAN_CHARS)
    throw new ToolInputError(`\`markdown\` is at most ${MAX_PLAN_CHARS} characters`);
  const plan = await ctx.recordPlan({ title: title.trim(), markdown });
  return {
    output: `Recorded your plan "${title.trim()}" (version ${plan.version}). Your turn ends here: the user will approve it or ask for changes.`,
    isError: false,
    details: { artifact_uid: plan.artifactUid },
  };
}
