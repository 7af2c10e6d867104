import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { isRejection, ProviderRejectedError, type AgentMessage, type ModelProvider } from './types';

const MAX_OUTPUT_TOKENS = 8192;

/** Anthropic's Messages API puts tool results in user turns and wants roles to alternate. */
export function toAnthropicMessages(messages: AgentMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = out[out.length - 1];
    if (last && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') push('user', [{ type: 'text', text: m.content || '(empty)' }]);
    else if (m.role === 'tool')
      push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content, is_error: m.isError }]);
    else {
      const blocks: ContentBlockParam[] = [];
      if (m.content) blocks.push({ type: 'text', text: m.content });
      for (const c of m.toolCalls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '(no output)' }]);
    }
  }
  return out;
}

export function createAnthropicProvider(options: {
  apiKey: string;
  baseUrl: string;
  timeoutMs: number;
}): ModelProvider {
  const client = new Anthropic({
    apiKey: options.apiKey,
    baseURL: options.baseUrl,
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  return {
    async complete({ model, system, messages, tools, maxTokens, signal }) {
      // The tools and the system prompt are the same on every step of a run: marking the end of
      // that prefix lets Anthropic's prompt cache serve it instead of reprocessing it each time.
      const wireTools: Tool[] = tools.map((t, i) => ({
        name: t.name,
        description: t.description,
        input_schema: t.parameters as Tool['input_schema'],
        ...(i === tools.length - 1 && !system ? { cache_control: { type: 'ephemeral' as const } } : {}),
      }));
      try {
        const reply = await client.messages.create(
          {
            model,
            max_tokens: maxTokens ?? MAX_OUTPUT_TOKENS,
            ...(system
              ? { system: [{ type: 'text' as const, text: system, cache_control: { type: 'ephemeral' as const } }] }
              : {}),
            messages: toAnthropicMessages(messages),
            ...(wireTools.length ? { tools: wireTools } : {}),
          },
          { signal },
        );
        let text = '';
        const toolCalls = [];
        for (const block of reply.content) {
          if (block.type === 'text') text += block.text;
          else if (block.type === 'tool_use')
            toolCalls.push({
              id: block.id,
              name: block.name,
              arguments: (block.input ?? {}) as Record<string, unknown>,
            });
        }
        return {
          text,
          toolCalls,
          inputTokens: reply.usage.input_tokens,
          outputTokens: reply.usage.output_tokens,
          finishReason: reply.stop_reason ?? undefined,
        };
      } catch (err) {
        if (err instanceof Anthropic.APIError && err.status !== undefined && isRejection(err.status)) {
          const body = err.error as { error?: { message?: unknown } } | undefined;
          const message = typeof body?.error?.message === 'string' ? body.error.message : err.message;
          throw new ProviderRejectedError(message, err.status);
        }
        throw err;
      }
    },
  };
}
