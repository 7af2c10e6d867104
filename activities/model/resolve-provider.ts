import type { Config } from '../../core/config';
import { MODEL_PROVIDER_KEY_VARIABLES, type ModelProviderName } from '../../core/model-providers';
import { observeModelCall } from '../../core/metrics';
import { createAnthropicProvider } from './anthropic-provider';
import { modelCostUsd } from './model-cost';
import { createOpenAiProvider } from './openai-provider';
import { tracedProvider } from './traced-provider';
import { ProviderNotConfiguredError, type ModelProvider, type ModelReply } from './types';

const PROVIDERS = {
  openai: {
    variable: MODEL_PROVIDER_KEY_VARIABLES.openai,
    settings: (c: Config) => c.models.openai,
    create: createOpenAiProvider,
  },
  anthropic: {
    variable: MODEL_PROVIDER_KEY_VARIABLES.anthropic,
    settings: (c: Config) => c.models.anthropic,
    create: createAnthropicProvider,
  },
} as const satisfies Record<ModelProviderName, unknown>;

/** A worker's provider clients, one per provider: a client is dear to make and keeps nothing of a call. */
const clients = new WeakMap<Config, Map<ModelProviderName, ModelProvider>>();

/** Picks the provider for `provider/model`; throws ProviderNotConfiguredError naming what to set. */
export function resolveProvider(config: Config, modelId: string): { provider: ModelProvider; model: string } {
  const slash = modelId.indexOf('/');
  const name = modelId.slice(0, slash);
  const model = modelId.slice(slash + 1);
  const entry = PROVIDERS[name as keyof typeof PROVIDERS] as (typeof PROVIDERS)[keyof typeof PROVIDERS] | undefined;
  if (!entry) {
    throw new ProviderNotConfiguredError(
      `No model provider is configured for "${modelId}": this service supports ${Object.keys(PROVIDERS)
        .map((p) => `${p}/<model>`)
        .join(' and ')}.`,
    );
  }
  const { apiKey, baseUrl } = entry.settings(config);
  if (!apiKey) {
    throw new ProviderNotConfiguredError(
      `No model provider is configured for "${modelId}": set ${entry.variable} on the worker.`,
    );
  }
  let ofConfig = clients.get(config);
  if (!ofConfig) clients.set(config, (ofConfig = new Map()));
  let client = ofConfig.get(name as ModelProviderName);
  if (!client) {
    client = entry.create({ apiKey, baseUrl, timeoutMs: config.models.requestTimeoutSeconds * 1000 });
    ofConfig.set(name as ModelProviderName, client);
  }
  return { provider: tracedProvider(observed(config, modelId, client), name), model };
}

/** Every call of the provider measured (`agent_runs_model_*`), step and summary calls alike. */
function observed(config: Config, modelId: string, provider: ModelProvider): ModelProvider {
  const configured =
    modelId in config.models.prices || modelId in config.models.contextTokens || modelId === config.models.defaultModel;
  const costUsd = (reply: ModelReply) => modelCostUsd(config, modelId, reply.inputTokens, reply.outputTokens);
  return {
    complete: (request) => observeModelCall(modelId, { configured, costUsd }, () => provider.complete(request)),
  };
}
