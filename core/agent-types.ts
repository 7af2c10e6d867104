/** The well-known types of named agents: a factory's FOREMAN and its specialists, or CUSTOM. */
export const AGENT_TYPES = ['FOREMAN', 'TRIAGE', 'SPEC', 'IMPLEMENT', 'REVIEW', 'VERIFY', 'CUSTOM'] as const;
export type AgentType = (typeof AGENT_TYPES)[number];
