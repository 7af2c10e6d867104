import { estimateTokens, requestBudget, summaryTokenLimit } from './context-window';
import type { AgentMessage } from './types';

/** The fixed instruction of a summarisation request. */
export const SUMMARY_INSTRUCTION =
  "You summarise the earlier part of a coding agent's conversation so that the agent can carry on without it. Write a short summary of: what the user asked for; what the agent did and found out; the files it changed; the decisions it made and why; the problems still open. If a summary so far is given, return one summary that extends it with the new exchanges. Write only the summary.";

/** What the summariser reads of one tool output and of one call's arguments. */
const TOOL_OUTPUT_CHARS = 2000;
const ARGUMENTS_CHARS = 500;
/** Characters for the section headings. */
const HEADINGS_CHARS = 200;

/** `text` within `max` characters: its beginning and end around a marker. */
export function cutMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = `\n[... ${text.length - max} characters cut ...]\n`;
  if (max <= marker.length) return text.slice(0, max);
  const keep = max - marker.length;
  return text.slice(0, Math.ceil(keep / 2)) + marker + text.slice(text.length - Math.floor(keep / 2));
}

function asText(m: AgentMessage): string {
  if (m.role === 'user') return `User: ${m.content}`;
  if (m.role === 'tool')
    return `Result of ${m.name}${m.isError ? ' (error)' : ''}: ${cutMiddle(m.content, TOOL_OUTPUT_CHARS)}`;
  const calls = (m.toolCalls ?? []).map(
    (c) => `\n[calls ${c.name} ${cutMiddle(JSON.stringify(c.arguments), ARGUMENTS_CHARS)}]`,
  );
  return `Agent: ${m.content}${calls.join('')}`;
}

/**
 * The request asking the model to summarise `messages` (extending `previous`, the summary so
 * far), cut to fit its context, and the longest reply it may give.
 */
export function summaryRequest(
  task: string,
  previous: string | undefined,
  messages: AgentMessage[],
  contextTokens: number,
): { system: string; messages: AgentMessage[]; maxTokens: number } {
  const room = Math.max(
    0,
    (requestBudget(contextTokens) - estimateTokens(SUMMARY_INSTRUCTION) - 8) * 4 - HEADINGS_CHARS,
  );
  const taskPart = cutMiddle(task, Math.floor(room / 4));
  const previousPart = previous === undefined ? undefined : cutMiddle(previous, Math.floor(room / 4));
  const exchanges = cutMiddle(messages.map(asText).join('\n\n'), room - taskPart.length - (previousPart?.length ?? 0));
  const sections = [
    `The task:\n${taskPart}`,
    ...(previousPart === undefined ? [] : [`The summary so far:\n${previousPart}`]),
    `The exchanges to ${previousPart === undefined ? 'summarise' : 'add to it'}:\n${exchanges}`,
  ];
  return {
    system: SUMMARY_INSTRUCTION,
    messages: [{ role: 'user', content: sections.join('\n\n') }],
    maxTokens: summaryTokenLimit(contextTokens),
  };
}
