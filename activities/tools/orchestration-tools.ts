import type { ToolSpec } from '../model/types';
import { ORCHESTRATION_TOOLS } from '../../workflows/run-contract';

/** The tools a factory's agents get for working with the other agents of their factory. */
export const ORCHESTRATION_TOOL_SPECS: ToolSpec[] = [
  {
    name: 'dispatch_agent',
    description:
      'Start a child run: another agent of your factory works on `prompt` in its own fresh workspace of the factory environment (it does not see your files). Returns its run_id at once; use wait_for_runs to get its result. Make the prompt self-contained and say what the agent must deliver.',
    parameters: {
      type: 'object',
      properties: {
        agent: {
          type: 'string',
          description: "The agent: its name, uid or agent type (e.g. IMPLEMENT, REVIEW) among your factory's agents.",
        },
        prompt: { type: 'string', description: 'The complete task for that agent.' },
      },
      required: ['agent', 'prompt'],
      additionalProperties: false,
    },
  },
  {
    name: 'wait_for_runs',
    description:
      "Wait until child runs end, and get each one's state and final message (its answer, or what went wrong). Without run_ids: every run you dispatched. With timeout_seconds: return after that long even if some are still running.",
    parameters: {
      type: 'object',
      properties: {
        run_ids: { type: 'array', items: { type: 'string' }, description: 'Run ids from dispatch_agent.' },
        timeout_seconds: { type: 'integer', description: 'Longest wait in seconds (at most 86400).' },
      },
      additionalProperties: false,
    },
  },
];

const NAMES: ReadonlySet<string> = new Set(ORCHESTRATION_TOOLS);

export function isOrchestrationTool(name: string): name is (typeof ORCHESTRATION_TOOLS)[number] {
  return NAMES.has(name);
}
