import type { StoredRunEvent } from '../../db/run-event-reads';

/** What the official clients call an action's category (`ConversationStep` content blocks). */
export type ActionCategory = 'command' | 'files' | 'search' | 'integration' | 'documents' | 'skill';

type Block =
  | { type: 'text'; text: string; message_id: string }
  | {
      type: 'action';
      id: string;
      category: ActionCategory;
      name: string;
      input: Record<string, unknown>;
      message_id: string;
    }
  | {
      type: 'action_result';
      action_id: string;
      category: ActionCategory;
      name: string;
      output: Record<string, unknown>;
      state: 'completed' | 'failed';
      message_id: string;
    }
  | { type: 'event'; name: string; data: Record<string, unknown>; message_id: string };

export interface StepMessage {
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: Block[];
  message_ids: string[];
  timestamp: string;
}

export interface ConversationStep {
  id: string;
  description?: string;
  summary?: string;
  started_at?: string;
  completed_at?: string;
  messages: StepMessage[];
  steps: ConversationStep[];
}

/** A tool result as the step shows it: what the model saw, cut, never the full output. */
const RESULT_TEXT_BYTES = 8 * 1024;

const CATEGORY_BY_TOOL: Record<string, ActionCategory> = {
  run_command: 'command',
  Bash: 'command',
  shell: 'command',
  exec_command: 'command',
  run_shell_command: 'command',
  read_file: 'files',
  write_file: 'files',
  edit_file: 'files',
  list_directory: 'files',
  Read: 'files',
  Write: 'files',
  Edit: 'files',
  MultiEdit: 'files',
  Grep: 'search',
  Glob: 'search',
  search_file_content: 'search',
  glob: 'search',
  upload_artifact: 'documents',
  read_skill: 'skill',
};

export function actionCategory(tool: string): ActionCategory {
  return CATEGORY_BY_TOOL[tool] ?? 'integration';
}

function cut(text: string): string {
  const bytes = Buffer.from(text);
  return bytes.length <= RESULT_TEXT_BYTES ? text : `${bytes.subarray(0, RESULT_TEXT_BYTES).toString()}…`;
}

function message(role: StepMessage['role'], event: StoredRunEvent, content: Block[]): StepMessage {
  return { role, content, message_ids: [event.id], timestamp: event.createdAt.toISOString() };
}

function messageOf(event: StoredRunEvent): StepMessage | undefined {
  const p = event.payload as Record<string, unknown>;
  const id = event.id;
  switch (event.kind) {
    case 'prompt':
      return message('user', event, [{ type: 'text', text: String(p.text ?? ''), message_id: id }]);
    case 'followup':
      return message('user', event, [{ type: 'text', text: String(p.message ?? ''), message_id: id }]);
    case 'assistant': {
      const calls = (p.tool_calls as { id: string; name: string; arguments: Record<string, unknown> }[]) ?? [];
      const text = String(p.text ?? '');
      return message('assistant', event, [
        ...(text ? [{ type: 'text' as const, text, message_id: id }] : []),
        ...calls.map((c) => ({
          type: 'action' as const,
          id: c.id,
          category: actionCategory(c.name),
          name: c.name,
          input: c.arguments ?? {},
          message_id: id,
        })),
      ]);
    }
    case 'tool_call': {
      const name = String(p.name);
      return message('tool', event, [
        {
          type: 'action_result',
          action_id: String(p.tool_call_id),
          category: actionCategory(name),
          name,
          output: {
            text: cut(String(p.output ?? '')),
            ...(typeof p.exit_code === 'number' ? { exit_code: p.exit_code } : {}),
            ...(p.timed_out ? { timed_out: true } : {}),
          },
          state: p.is_error ? 'failed' : 'completed',
          message_id: id,
        },
      ]);
    }
    case 'skill_load':
      return message('system', event, [
        { type: 'event', name: 'skill_loaded', data: { name: p.name }, message_id: id },
      ]);
    case 'files_changed': {
      const files = (p.files as { repo: string; path: string; diff: string }[]) ?? [];
      return message('system', event, [
        {
          type: 'event',
          name: 'files_changed',
          data: { files: files.map((f) => ({ repo: f.repo, path: f.path, removed_changes: f.diff === '' })) },
          message_id: id,
        },
      ]);
    }
    default:
      return undefined;
  }
}

/**
 * The `steps` of a conversation as the newest official client reads them: one step per turn of
 * each run, in order (`{run_id}/t{turn}`), described by the message that started it and
 * summarised by the agent's last answer in it. A turn's messages are its transcript's entries
 * (conversation kinds only), tool calls as `action` blocks and their results as `action_result`.
 */
export function conversationSteps(runs: { runId: string; events: StoredRunEvent[] }[]): ConversationStep[] {
  const steps: ConversationStep[] = [];
  for (const { runId, events } of runs) {
    let current: { turn: number; step: ConversationStep } | undefined;
    for (const event of events) {
      const msg = messageOf(event);
      if (!msg) continue;
      if (!current || current.turn !== event.turn) {
        current = { turn: event.turn, step: { id: `${runId}/t${event.turn}`, messages: [], steps: [] } };
        steps.push(current.step);
      }
      const { step } = current;
      step.messages.push(msg);
      if (msg.role === 'user' && step.description === undefined)
        step.description = (msg.content[0] as { text: string }).text;
      if (event.kind === 'assistant') {
        const text = String((event.payload as { text?: string }).text ?? '');
        if (text) step.summary = text;
      }
      step.started_at ??= msg.timestamp;
      step.completed_at = msg.timestamp;
    }
  }
  return steps;
}
