import type { EntityManager } from 'typeorm';
import { latestContextSummary, type RecordedContextSummary } from '../db/context-summaries';
import { loadRunEventByKey, loadRunEvents, type StoredRunEvent } from '../db/run-event-reads';

/** The transcript entries the model's conversation is made of, one message each. */
export const CONVERSATION_KINDS = ['prompt', 'followup', 'assistant', 'tool_call'] as const;

export interface StepConversation {
  /** The run's first entry (its prompt), then every entry after those `summary` stands for. */
  events: StoredRunEvent[];
  /**
   * The latest summary of older exchanges: it stands for exactly the entries between the first
   * and `events[1]`, messages 1 to `to_message` - 1 of the whole conversation. Without one,
   * `events` is the whole conversation.
   */
  summary?: RecordedContextSummary;
}

/**
 * What a step reads to rebuild the model's conversation. Once the run has a summary, only its
 * prompt and the entries after those the summary stands for, so a step's reads stay bounded
 * however long the run.
 */
export async function loadStepConversation(manager: EntityManager, runId: string): Promise<StepConversation> {
  const read = { kinds: CONVERSATION_KINDS, withoutFullOutput: true };
  const summary = await latestContextSummary(manager, runId);
  if (!summary) return { events: await loadRunEvents(manager, runId, read) };
  // Every run's first entry is its prompt, recorded with the run under this key. Entries are only
  // appended, and a run's steps run one at a time: the summary's last entry is still message
  // `to_message` - 1 of the whole conversation, as when the summary was written.
  const [prompt, lastCovered] = await Promise.all([
    loadRunEventByKey(manager, runId, 'prompt', read),
    loadRunEventByKey(manager, runId, summary.payload.last_event_key),
  ]);
  if (!lastCovered || !prompt) return { events: await loadRunEvents(manager, runId, read) };
  const after = await loadRunEvents(manager, runId, { ...read, afterId: lastCovered.id });
  return { events: [prompt, ...after], summary };
}
