import type { RunState } from './run-state';
import type { RunStatusMessage } from './run-types';

/** Kinds of transcript entries; each run's entries are stored in order in `run_events`. */
export type RunEventPayloads = {
  state: { state: RunState; status_message?: RunStatusMessage };
  prompt: { text: string; base_prompt?: string };
  followup: { followup_id: string; seq: number; message: string; mode: string };
  assistant: { text: string; model_id: string; total_tokens?: number; finish_reason?: string };
  config: { environment_id?: string; skill_spec?: string; mcp_servers?: string[]; model_id: string };
  notice: { message: string };
};

export type RunEventKind = keyof RunEventPayloads;
export type RunEventPayload = RunEventPayloads[RunEventKind];
