import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import type { Logger } from '../../core/logger';
import type { RecordedContextSummary } from '../../db/context-summaries';
import { appendRunEvent } from '../../db/run-events';
import { addRunUsage } from '../../db/run-usage';
import { capSummary, fitToContext, type ConversationSummary } from './context-window';
import { modelCostUsd } from './model-cost';
import { summaryRequest } from './summary-request';
import type { AgentMessage, ModelProvider, ToolSpec } from './types';

export interface ConversationToFit {
  runId: string;
  turn: number;
  step: number;
  modelId: string;
  provider: ModelProvider;
  model: string;
  system: string;
  tools: ToolSpec[];
  /** The first message, then those after the ones `summary` stands for (all of them without it). */
  messages: AgentMessage[];
  /** The transcript key of the event each message comes from. */
  eventKeys: string[];
  /** The latest summary recorded: it stands for the messages between the first and `messages[1]`. */
  summary?: RecordedContextSummary;
  contextTokens: number;
  signal: AbortSignal;
}

/**
 * The conversation to send, within the model's context. When shortening tool outputs is not
 * enough, the model summarises the older exchanges once: the summary is recorded in the
 * transcript, so a retried or later step reuses it and the next summary extends it. When the
 * model cannot summarise, those exchanges are left out instead: summarising never fails a step.
 */
export async function fitConversation(
  { dataSource, config, logger }: { dataSource: DataSource; config: Config; logger: Logger },
  c: ConversationToFit,
): Promise<AgentMessage[]> {
  const previous: (ConversationSummary & { key: string }) | undefined = c.summary && {
    text: c.summary.payload.text,
    to: c.summary.payload.to_message,
    key: c.summary.eventKey,
  };
  // Indexes, recorded ones too, are those of the whole conversation, of which `messages` leaves
  // out what the summary stands for.
  const skipped = previous ? previous.to - 1 : 0;
  const fitted = fitToContext(c.system, c.messages, c.tools, c.contextTokens, previous, skipped);
  if (!fitted.summarise) return fitted.messages;

  const { from, to } = fitted.summarise;
  const request = summaryRequest(
    c.messages[0]!.content,
    previous?.text,
    c.messages.slice(from - skipped, to - skipped),
    c.contextTokens,
  );
  const context = { run_id: c.runId, turn: c.turn, step: c.step, from, to };
  let reply;
  try {
    reply = await c.provider.complete({ model: c.model, ...request, tools: [], signal: c.signal });
  } catch (err) {
    if (c.signal.aborted) throw err;
    logger.warn('summarising older exchanges failed; leaving them out of the request instead', {
      ...context,
      error: err,
    });
    return fitted.messages;
  }
  const text = capSummary(reply.text.trim(), c.contextTokens);
  if (!text) {
    logger.warn('the model returned an empty summary; leaving older exchanges out of the request instead', context);
    return fitted.messages;
  }
  const totalTokens = reply.inputTokens + reply.outputTokens;
  await dataSource.transaction(async (tx) => {
    const wrote = await appendRunEvent(tx, {
      runId: c.runId,
      eventKey: `context-summary-t${c.turn}-s${c.step}-m${from}-${to}`,
      kind: 'context_summary',
      turn: c.turn,
      payload: {
        text,
        from_message: from,
        to_message: to,
        last_event_key: c.eventKeys[to - 1 - skipped]!,
        ...(previous ? { previous_key: previous.key } : {}),
        model_id: c.modelId,
        total_tokens: totalTokens,
        input_tokens: reply.inputTokens,
        output_tokens: reply.outputTokens,
      },
    });
    // Counted once, like the step's own model call, however often the step is retried.
    if (wrote)
      await addRunUsage(
        tx,
        c.runId,
        totalTokens,
        modelCostUsd(config, c.modelId, reply.inputTokens, reply.outputTokens),
      );
  });
  return fitToContext(c.system, c.messages, c.tools, c.contextTokens, { text, to }, skipped).messages;
}
