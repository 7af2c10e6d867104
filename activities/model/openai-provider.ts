import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { isRejection, parseToolArguments, ProviderRejectedError, type ModelProvider } from './types';

/** Any OpenAI-compatible Chat Completions endpoint. */
export function createOpenAiProvider(options: { apiKey: string; baseUrl: string; timeoutMs: number }): ModelProvider {
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseUrl,
    // Temporal retries the whole step with backoff; the library must not retry on its own.
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  return {
    async complete({ model, system, messages, tools, maxTokens, signal }) {
      const wire: ChatCompletionMessageParam[] = [];
      if (system) wire.push({ role: 'system', content: system });
      for (const m of messages) {
        if (m.role === 'user') wire.push({ role: 'user', content: m.content });
        else if (m.role === 'tool') wire.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
        else
          wire.push({
            role: 'assistant',
            content: m.content || null,
            ...(m.toolCalls?.length
              ? {
                  tool_calls: m.toolCalls.map((c) => ({
                    id: c.id,
                    type: 'function' as const,
                    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                  })),
                }
              : {}),
          });
      }
      const wireTools: ChatCompletionTool[] = tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      }));
      try {
        const completion = await client.chat.completions.create(
          {
            model,
            messages: wire,
            ...(wireTools.length ? { tools: wireTools } : {}),
            // Not `max_tokens`, which OpenAI's reasoning models refuse.
            ...(maxTokens ? { max_completion_tokens: maxTokens } : {}),
          },
          { signal },
        );
        const choice = completion.choices[0];
        const toolCalls = (choice?.message?.tool_calls ?? []).flatMap((c) =>
          c.type === 'function'
            ? [{ id: c.id, name: c.function.name, arguments: parseToolArguments(c.function.arguments) }]
            : [],
        );
        return {
          text: choice?.message?.content ?? '',
          toolCalls,
          inputTokens: completion.usage?.prompt_tokens ?? 0,
          outputTokens: completion.usage?.completion_tokens ?? 0,
          finishReason: choice?.finish_reason ?? undefined,
        };
      } catch (err) {
        if (err instanceof OpenAI.APIError && err.status !== undefined && isRejection(err.status)) {
          const body = err.error as { message?: unknown } | undefined;
          throw new ProviderRejectedError(typeof body?.message === 'string' ? body.message : err.message, err.status);
        }
        throw err;
      }
    },
  };
}
