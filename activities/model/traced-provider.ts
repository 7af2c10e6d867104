import { SpanKind } from '@opentelemetry/api';
import { withSpan } from '../../core/spans';
import type { ModelProvider } from './types';

/**
 * A provider whose every call is a `chat <model>` span with the OpenTelemetry GenAI attributes:
 * provider, model, tokens in and out, finish reason. Neither prompt nor reply goes in.
 */
export function tracedProvider(provider: ModelProvider, system: string): ModelProvider {
  return {
    complete: (request) =>
      withSpan(
        `chat ${request.model}`,
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.system': system,
          'gen_ai.request.model': request.model,
          'agent_runs.model_id': `${system}/${request.model}`,
        },
        async (span) => {
          const reply = await provider.complete(request);
          span.setAttributes({
            'gen_ai.usage.input_tokens': reply.inputTokens,
            'gen_ai.usage.output_tokens': reply.outputTokens,
            'agent_runs.tool_calls_requested': reply.toolCalls.length,
            ...(reply.finishReason ? { 'gen_ai.response.finish_reasons': [reply.finishReason] } : {}),
          });
          return reply;
        },
        SpanKind.CLIENT,
      ),
  };
}
