import type { RunState } from './run-state';
import type { PullRequestStatus } from './pull-requests';
import type { RunStatusMessage } from './run-types';

/** A connection the sandbox's egress proxy refused. */
export interface NetworkRefusalRecord {
  host: string;
  port: number;
  reason: string;
}

/** An attachment as the first message names it: its path in the workspace. */
export interface PromptAttachment {
  path: string;
  mime_type: string;
  size_bytes: number;
}

export interface ToolCallRecord {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** Kinds of transcript entries; each run's entries are stored in order in `run_events`. */
export type RunEventPayloads = {
  /** `resumed`: INPROGRESS again after BLOCKED, within the same turn (not a new claim of the run). */
  state: { state: RunState; status_message?: RunStatusMessage; resumed?: boolean };
  /** `attachments`: files the request brought, written into the workspace before the agent starts. */
  prompt: { text: string; base_prompt?: string; mode?: string; attachments?: PromptAttachment[] };
  /** `after_plan`: the first message in normal mode after one in plan mode (the model is told it may carry the plan out). */
  followup: { followup_id: string; seq: number; message: string; mode: string; after_plan?: boolean };
  assistant: {
    text: string;
    model_id: string;
    total_tokens?: number;
    input_tokens?: number;
    output_tokens?: number;
    finish_reason?: string;
    tool_calls?: ToolCallRecord[];
  };
  /** One tool call and its result; `output` is what the model saw, `full_output` all of it. */
  tool_call: {
    tool_call_id: string;
    name: string;
    input: Record<string, unknown>;
    output: string;
    is_error: boolean;
    exit_code?: number | null;
    duration_ms?: number;
    timed_out?: boolean;
    full_output?: string;
    network_refusals?: NetworkRefusalRecord[];
    /** The call started before its step was interrupted and was not run again; outcome unknown. */
    interrupted?: boolean;
    /** The artifact an `upload_artifact` call recorded. */
    artifact_uid?: string;
  };
  /** Written before a tool call with side effects runs; a retried step finding it without a result does not rerun it. */
  tool_call_started: {
    tool_call_id: string;
    name: string;
    input: Record<string, unknown>;
    step: number;
    call_index: number;
  };
  /** A skill loaded through `read_skill` (section 2.4 of the spec). */
  skill_load: { name: string; input: { bundled_skill_id: string } | { skill_path: string } };
  /** Files the step changed in the workspace, one unified diff per file (empty diff: reverted). */
  files_changed: { files: { repo: string; path: string; diff: string }[] };
  /** A setup command of the environment. */
  command: {
    phase: 'setup';
    command: string;
    exit_code: number | null;
    duration_ms: number;
    output: string;
    timed_out: boolean;
    network_refusals?: NetworkRefusalRecord[];
  };
  config: {
    environment_id?: string;
    skill_spec?: string;
    mcp_servers?: string[];
    mcp_tools?: string[];
    model_id: string;
    skills?: string[];
  };
  /**
   * A word to the reader about the run. `warning`: something went wrong or was left out that
   * the reader may need to act on; absent: an ordinary notice (what happened, what comes next).
   * A workspace's notice (`workspace-t…`) also names the image it runs on, when it runs on one.
   */
  notice: { message: string; level?: 'warning'; image_reference?: string; image_digest?: string };
  /**
   * A call of the agent that waits for a person (`pending`), and how that ended: who decided,
   * when (the entry's time) and why (`comment`; a question's answer). `message` says it in words.
   */
  approval: {
    approval_id: string;
    kind: 'tool_call' | 'question';
    tool: string;
    state: 'pending' | 'approved' | 'denied' | 'timed_out' | 'cancelled';
    message: string;
    decided_by?: { uid: string; type: string; display_name: string };
    comment?: string;
    expires_at?: string;
  };
  /**
   * What the model is shown instead of the conversation's messages 1 to `to_message` - 1 (0 is
   * the first user message) once they no longer fit its context: a summary it wrote of messages
   * `from_message` to `to_message` - 1 and of the summary before (`previous_key`), if any.
   */
  /**
   * A pull request the run delivered was opened (`opened`), or its status changed (`previous_status`):
   * as the delivery, the forge's webhook or a poll of the forge said (`source`).
   */
  pull_request: {
    repository: string;
    url: string;
    number: number;
    status: PullRequestStatus;
    previous_status?: PullRequestStatus;
    opened?: boolean;
    source: PullRequestStatusSource;
  };
  context_summary: {
    text: string;
    from_message: number;
    to_message: number;
    /** The transcript key of the last message covered: a summary only stands for the conversation it was made of. */
    last_event_key: string;
    previous_key?: string;
    model_id: string;
    total_tokens: number;
    input_tokens: number;
    output_tokens: number;
  };
};

/** Who said a pull request's status: the worker that opened or updated it, the forge's webhook, or a poll of the forge. */
export type PullRequestStatusSource = 'delivery' | 'forge_webhook' | 'poll';

export type RunEventKind = keyof RunEventPayloads;
export type RunEventPayload = RunEventPayloads[RunEventKind];
