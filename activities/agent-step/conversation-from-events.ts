import type { PromptAttachment } from '../../core/run-events';
import type { StoredRunEvent } from '../../db/run-event-reads';
import type { AgentMessage, ToolCall } from '../model/types';
import { inMode } from './plan-mode';

/** What the first message says about the request's attachments. */
function attachmentsNote(attachments: PromptAttachment[]): string {
  const lines = attachments.map((a) => `- ${a.path} (${a.mime_type}, ${a.size_bytes} bytes)`);
  return `Attached files (in your workspace):\n${lines.join('\n')}`;
}

/** What the model is told of a tool call whose turn was interrupted or cancelled before it finished. */
export const UNFINISHED_TOOL_CALL =
  'This tool call did not finish: the turn was stopped (interrupted or cancelled) while it ran, so its outcome is unknown. Check the state of the workspace before repeating it.';

/**
 * The model's view of the conversation, rebuilt from the transcript. A tool call left without a
 * result by a turn that was stopped is answered as unfinished before the next message: providers
 * refuse a conversation where a tool call has no result.
 */
export function conversationFromEvents(events: Pick<StoredRunEvent, 'kind' | 'payload'>[]): AgentMessage[] {
  const messages: AgentMessage[] = [];
  let unanswered: ToolCall[] = [];
  const answerUnfinished = () => {
    for (const call of unanswered) {
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: UNFINISHED_TOOL_CALL,
        isError: true,
      });
    }
    unanswered = [];
  };
  for (const e of events) {
    if (e.kind === 'prompt' || e.kind === 'followup' || e.kind === 'assistant') answerUnfinished();
    const p = e.payload;
    if (e.kind === 'prompt') {
      // A run started from a skill alone has no prompt; providers want a first user message.
      const text = String(p.text ?? '').trim() ? String(p.text) : 'Follow the instructions of your skill.';
      const attachments = (p.attachments as PromptAttachment[] | undefined) ?? [];
      messages.push({
        role: 'user',
        content: inMode(p.mode, attachments.length ? `${text}\n\n${attachmentsNote(attachments)}` : text),
      });
    } else if (e.kind === 'followup') {
      messages.push({ role: 'user', content: inMode(p.mode, String(p.message), p.after_plan === true) });
    } else if (e.kind === 'assistant') {
      const toolCalls = (p.tool_calls as ToolCall[] | undefined) ?? [];
      messages.push({ role: 'assistant', content: String(p.text ?? ''), ...(toolCalls.length ? { toolCalls } : {}) });
      unanswered = [...toolCalls];
    } else if (e.kind === 'tool_call') {
      unanswered = unanswered.filter((c) => c.id !== String(p.tool_call_id));
      messages.push({
        role: 'tool',
        toolCallId: String(p.tool_call_id),
        name: String(p.name),
        content: String(p.output),
        isError: p.is_error === true,
      });
    }
  }
  return messages;
}
