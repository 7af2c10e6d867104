import OpenAI from 'openai';
import type { Config } from '../core/config';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ModelReply {
  text: string;
  totalTokens?: number;
  finishReason?: string;
}

export interface ModelProvider {
  complete(model: string, messages: ChatMessage[], signal: AbortSignal): Promise<ModelReply>;
}

/** The provider refused the request (4xx other than timeouts, conflicts and rate limits). */
export class ProviderRejectedError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ProviderRejectedError';
  }
}

/** No provider is configured for a model id; the message names what to set. */
export class ProviderNotConfiguredError extends Error {
  override name = 'ProviderNotConfiguredError';
}

const PROVIDER_ENV: Record<string, string> = { openai: 'OPENAI_API_KEY', anthropic: 'ANTHROPIC_API_KEY' };

/** Picks the provider for `provider/model`; throws ProviderNotConfiguredError when there is none. */
export function resolveProvider(config: Config, modelId: string): { provider: ModelProvider; model: string } {
  const slash = modelId.indexOf('/');
  const providerName = modelId.slice(0, slash);
  const model = modelId.slice(slash + 1);
  if (providerName === 'openai' && config.models.openai.apiKey) {
    return { provider: openAiProvider(config), model };
  }
  const variable = PROVIDER_ENV[providerName];
  throw new ProviderNotConfiguredError(
    variable
      ? `No model provider is configured for "${modelId}": set ${variable} on the worker.`
      : `No model provider is configured for "${modelId}": supported providers are ${Object.keys(PROVIDER_ENV)
          .filter((p) => p === 'openai')
          .map((p) => `${p}/<model>`)
          .join(', ')}.`,
  );
}

function openAiProvider(config: Config): ModelProvider {
  const client = new OpenAI({
    apiKey: config.models.openai.apiKey,
    baseURL: config.models.openai.baseUrl,
    // Temporal retries the whole step with backoff; the library must not retry on its own.
    maxRetries: 0,
    timeout: config.models.requestTimeoutSeconds * 1000,
  });
  return {
    async complete(model, messages, signal) {
      try {
        const completion = await client.chat.completions.create({ model, messages }, { signal });
        const choice = completion.choices[0];
        return {
          text: choice?.message?.content ?? '',
          totalTokens: completion.usage?.total_tokens,
          finishReason: choice?.finish_reason ?? undefined,
        };
      } catch (err) {
        if (err instanceof OpenAI.APIError && err.status !== undefined && isRejection(err.status)) {
          throw new ProviderRejectedError(providerMessage(err), err.status);
        }
        throw err;
      }
    },
  };
}

function isRejection(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
}

function providerMessage(err: InstanceType<typeof OpenAI.APIError>): string {
  const body = err.error as { message?: unknown } | undefined;
  const message = typeof body?.message === 'string' ? body.message : err.message;
  return message;
}
