import type { AgentMessage, ToolSpec } from './types';

/**
 * Keeps the conversation sent to the model within its context window; the transcript keeps
 * everything. First the oldest tool outputs shrink to a summary line (the most recent ones stay
 * whole); if that is not enough, the oldest exchanges (an assistant message and its tool
 * results, so that every tool call keeps its result) give way to one note saying so.
 */

/** Of the context, what the request may fill; the rest is for the reply and estimation error. */
const REQUEST_SHARE = 0.75;
/** Tool results at the end of the conversation that are never shortened. */
const KEEP_RECENT_TOOL_RESULTS = 4;
const SUMMARY_CHARS = 160;

/** A rough token count (4 characters a token), enough to stay safely within a budget. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function requestTokens(system: string, messages: AgentMessage[], tools: ToolSpec[]): number {
  const body = messages.map((m) =>
    m.role === 'assistant' ? m.content + JSON.stringify(m.toolCalls ?? []) : m.content,
  );
  return estimateTokens(system + body.join('') + JSON.stringify(tools)) + messages.length * 4;
}

function trimmedToolOutput(content: string): string {
  const firstLine = content.split('\n', 1)[0]!.slice(0, SUMMARY_CHARS);
  return `[output shortened to fit the context window; ${content.length} characters in the transcript. It began: ${firstLine}]`;
}

export interface FittedConversation {
  messages: AgentMessage[];
  /** Tool outputs shortened and exchanges left out to fit. */
  trimmedOutputs: number;
  omittedMessages: number;
}

/** The conversation, shortened as little as possible to fit `contextTokens`. */
export function fitToContext(
  system: string,
  messages: AgentMessage[],
  tools: ToolSpec[],
  contextTokens: number,
): FittedConversation {
  const budget = Math.floor(contextTokens * REQUEST_SHARE);
  const fitted = messages.map((m) => ({ ...m }));
  let trimmedOutputs = 0;
  const toolIndexes = fitted.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
  const shrinkable = toolIndexes.slice(0, Math.max(0, toolIndexes.length - KEEP_RECENT_TOOL_RESULTS));
  for (const i of shrinkable) {
    if (requestTokens(system, fitted, tools) <= budget) break;
    const message = fitted[i]!;
    const short = trimmedToolOutput(message.content);
    if (short.length < message.content.length) {
      message.content = short;
      trimmedOutputs += 1;
    }
  }

  // Still too long: leave out whole exchanges after the first message, oldest first.
  let omittedMessages = 0;
  while (requestTokens(system, fitted, tools) > budget) {
    const start = fitted.findIndex((m, i) => i > 0 && m.role === 'assistant');
    if (start < 0) break;
    let end = start + 1;
    while (end < fitted.length && fitted[end]!.role === 'tool') end += 1;
    // Never the last exchange: the model must see what it just did.
    if (end >= fitted.length) break;
    omittedMessages += fitted.splice(start, end - start).length;
  }
  // Said in the first message, so that roles still alternate for every provider.
  if (omittedMessages > 0 && fitted[0]?.role === 'user') {
    fitted[0] = {
      role: 'user',
      content: `${fitted[0].content}\n\n[Later in this conversation, ${omittedMessages} earlier messages were left out to fit the context window. The transcript keeps them; the workspace holds their results.]`,
    };
  }
  return { messages: fitted, trimmedOutputs, omittedMessages };
}
