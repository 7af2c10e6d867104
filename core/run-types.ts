import type { HarnessSecretField, HarnessType } from './harnesses';
import type { ErrorCode } from './error-codes';
import type { ApprovalPolicy } from './approval-policy';
import type { DeliverySettings } from './schemas/delivery-schemas';

/** `MCPServerConfig`: `command` (+ `args`, `env`) for stdio, or `url` (+ `headers`) for HTTP; exactly one. */
export interface McpServerConfig {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

/** `AmbientAgentConfig` as stored on a run: the request's config with defaults filled in. */
export interface ResolvedAgentConfig {
  name?: string;
  model_id: string;
  base_prompt?: string;
  environment_id?: string;
  skill_spec?: string;
  /** Skills advertised to the agent besides its workspace's (the run's and its identity's). */
  skills?: string[];
  /** The WORKER_ID of the worker the run must execute on. */
  worker_host?: string;
  mcp_servers?: Record<string, McpServerConfig>;
  idle_timeout_minutes: number;
  max_steps?: number;
  max_tokens?: number;
  computer_use_enabled?: boolean;
  /** The agent that works the run; absent or `oz`: this service's own loop. */
  harness?: { type?: HarnessType; model_id?: string; reasoning_level?: string };
  /** Names of the team's managed secrets a CLI harness authenticates with (never their values). */
  harness_auth_secrets?: Partial<Record<HarnessSecretField, string>>;
  /** The calls that wait for a person: the run's own policy merged with its agent's and environment's. */
  approval?: ApprovalPolicy;
  /** What the worker does with a turn's change: the run's own settings over its environment's. */
  delivery?: DeliverySettings;
}

export interface RunStatusMessage {
  message: string;
  error_code?: ErrorCode;
  retryable?: boolean;
}

export type AgentSkillInfo =
  | { name: string; description?: string; full_path: string }
  | { name?: string; description?: string; bundled_skill_id: string };
