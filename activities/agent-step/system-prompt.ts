import type { AdvertisedSkillRow } from '../../db/run-step-reads';
import { DEFAULT_BASE_PROMPT } from '../../services/runs/new-run';

/** An agent of the run's factory, as the system prompt introduces it. */
export interface FactoryColleague {
  uid: string;
  name: string;
  agentType: string;
  description: string | null;
}

export function systemPrompt(
  basePrompt: string | undefined,
  skills: AdvertisedSkillRow[],
  colleagues: FactoryColleague[] = [],
): string {
  const parts = [
    basePrompt?.trim() || DEFAULT_BASE_PROMPT,
    'Your workspace is the current directory of your tools; repositories of the environment are cloned into it. Paths are relative to the workspace root.',
  ];
  if (colleagues.length) {
    parts.push(
      `Agents of your factory you can give work to with dispatch_agent (then collect their results with wait_for_runs):\n${colleagues
        .map((c) => `- ${c.name} (${c.agentType}, uid ${c.uid})${c.description ? `: ${c.description}` : ''}`)
        .join('\n')}`,
    );
  }
  if (skills.length) {
    parts.push(
      `Skills you can load with the read_skill tool when a task matches one:\n${skills.map((s) => `- ${s.name}: ${s.description}`).join('\n')}`,
    );
  }
  return parts.join('\n\n');
}
