import type { AgentMessage, ToolSpec } from './types';

/**
 * Keeps the conversation sent to the model within its context window; the transcript keeps
 * everything. First the oldest tool outputs shrink to a summary line (the most recent ones stay
 * whole); if that is not enough, the oldest exchanges after the first message give way to a
 * summary the model writes of them (context-summary.ts), or, when there is none, to a note saying
 * they were left out. Every tool call keeps its result, and the last exchange always stays.
 */

/** Of the context, what the request may fill; the rest is for the reply and estimation error. */
const REQUEST_SHARE = 0.75;
/** Tool results at the end of the conversation that are never shortened. */
const KEEP_RECENT_TOOL_RESULTS = 4;
const SUMMARY_CHARS = 160;
/**
 * A new summary takes in enough exchanges to bring the request down to this share of the budget,
 * so that the next steps need none.
 */
const AFTER_SUMMARY_SHARE = 0.5;
const SUMMARY_CUT = ' [summary cut]';

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

/** The tokens a request may fill in a context of `contextTokens`. */
export function requestBudget(contextTokens: number): number {
  return Math.floor(contextTokens * REQUEST_SHARE);
}

/** The longest summary of older exchanges, in tokens: a tenth of the context, at most 2000. */
export function summaryTokenLimit(contextTokens: number): number {
  return Math.min(2000, Math.floor(contextTokens / 10));
}

/** A summary's text cut to its limit, so that the room kept for it is always enough. */
export function capSummary(text: string, contextTokens: number): string {
  const limit = summaryTokenLimit(contextTokens) * 4;
  return text.length <= limit ? text : text.slice(0, Math.max(0, limit - SUMMARY_CUT.length)) + SUMMARY_CUT;
}

/** A summary of the conversation's messages 1 to `to` - 1 (message 0 is the first user message). */
export interface ConversationSummary {
  text: string;
  to: number;
}

function summaryMessage(text: string, to: number): AgentMessage {
  return {
    role: 'user',
    content: `[A summary of the next ${to - 1} messages of this conversation, written to fit the context window; the transcript keeps them, the workspace holds their results.\n${text}]`,
  };
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
  /**
   * Set when shortening tool outputs was not enough: the messages [from, to) to summarise (after
   * the summary given, if any) so that nothing need be left out. `messages` leaves them out.
   */
  summarise?: { from: number; to: number };
}

/**
 * The conversation, shortened as little as possible to fit `contextTokens`; with `summary`, the
 * messages it covers are replaced by it. `messages` may leave out `skipped` messages after the
 * first when the summary covers them: indexes (`summary.to`, `summarise`) are always those of
 * the whole conversation.
 */
export function fitToContext(
  system: string,
  messages: AgentMessage[],
  tools: ToolSpec[],
  contextTokens: number,
  summary?: ConversationSummary,
  skipped = 0,
): FittedConversation {
  const budget = requestBudget(contextTokens);
  const covered = summary ? summary.to : 1;
  if (covered - skipped < 1) throw new Error(`${skipped} messages left out, but a summary covers only ${covered - 1}`);
  const head = messages.slice(0, 1);
  if (summary) head.push(summaryMessage(capSummary(summary.text, contextTokens), summary.to));
  const fitted = [...head, ...messages.slice(covered - skipped)].map((m) => ({ ...m }));
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

  let summarise: FittedConversation['summarise'];
  if (requestTokens(system, fitted, tools) > budget) {
    // The summary ends where an exchange starts and before the last one; it takes in exchanges
    // until the rest fits well within the budget (with room for the longest summary), or all it can.
    const room = summaryMessage('x'.repeat(summaryTokenLimit(contextTokens) * 4), skipped + messages.length);
    const last = fitted.findLastIndex((m) => m.role === 'assistant');
    let end: number | undefined;
    for (let i = head.length + 1; i <= last; i++) {
      if (fitted[i]!.role === 'tool') continue;
      end = i;
      if (requestTokens(system, [fitted[0]!, room, ...fitted.slice(i)], tools) <= budget * AFTER_SUMMARY_SHARE) break;
    }
    if (end !== undefined) summarise = { from: covered, to: covered + end - head.length };
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
  return { messages: fitted, trimmedOutputs, omittedMessages, ...(summarise ? { summarise } : {}) };
}
