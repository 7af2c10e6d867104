/** Provider-neutral conversation and tool types used by the agent loop. */

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type AgentMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError: boolean };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  model: string;
  system?: string;
  messages: AgentMessage[];
  tools: ToolSpec[];
  /** The longest reply, in tokens; the provider's own limit when unset. */
  maxTokens?: number;
  signal: AbortSignal;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCall[];
  inputTokens: number;
  outputTokens: number;
  finishReason?: string;
}

export interface ModelProvider {
  complete(request: ModelRequest): Promise<ModelReply>;
}

/** The provider refused the request (a 4xx other than timeouts, conflicts and rate limits). */
export class ProviderRejectedError extends Error {
  override name = 'ProviderRejectedError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** No provider is configured for a model id; the message names what to set. */
export class ProviderNotConfiguredError extends Error {
  override name = 'ProviderNotConfiguredError';
}

/** 4xx statuses that mean "this request will never work", as opposed to "try again later". */
export function isRejection(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
}

export function parseToolArguments(raw: string | undefined): Record<string, unknown> {
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { value: parsed };
  } catch {
    return { _unparsable_arguments: raw };
  }
}
