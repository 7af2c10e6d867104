import { z } from './zod';
import { DEFAULT_APPROVAL_TIMEOUT_MINUTES } from '../approval-policy';

/** The longest a call may wait for a person: 30 days. */
export const MAX_APPROVAL_TIMEOUT_MINUTES = 30 * 1440;

const globs = (what: string) => z.array(z.string().min(1).max(1000)).max(100).optional().openapi({ description: what });

/** `config.approval`: on a run, an agent identity, an environment or a schedule's `agent_config`. */
export const approvalPolicySchema = z
  .strictObject({
    commands: globs(
      'Globs matched against the whole command line of a `run_command` call (`*` and `?` match any character, `/`, spaces and newlines included): a match waits for a decision. A guard rail, not a sandbox: the same effect can be written many ways.',
    ),
    tools: globs('Globs matched against the name of any tool call (built-in, MCP, `dispatch_agent`): a match waits.'),
    timeout_minutes: z
      .number()
      .int()
      .min(1)
      .max(MAX_APPROVAL_TIMEOUT_MINUTES)
      .optional()
      .openapi({
        description: `How long a call waits before it is denied as timed out (default ${DEFAULT_APPROVAL_TIMEOUT_MINUTES}).`,
      }),
  })
  .openapi('ApprovalPolicy', {
    description:
      "Calls of the agent that wait for a person's decision (the run is BLOCKED meanwhile). Merged with the run's agent identity's and environment's, the stricter winning: every glob of each, the shortest timeout.",
  });

/** `POST /agent/runs/{runId}/approvals/{approvalId}`. */
export const approvalDecisionSchema = z
  .strictObject({
    decision: z.enum(['approve', 'deny']),
    comment: z.string().max(10_000).optional().openapi({
      description:
        'Why (shown to the model with a denial, recorded in the transcript and the audit log); for a question, `approve` with the answer as `comment`.',
    }),
  })
  .openapi('ApprovalDecision');

export type ApprovalDecisionRequest = z.infer<typeof approvalDecisionSchema>;
