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

type ResolvedProvider = { provider: ModelProvider; model: string };

/** A worker's providers, made once per model: a client is dear to make (its resources, its settings), and keeps nothing of a call. */
const resolved = new WeakMap<Config, Map<string, ResolvedProvider>>();

/** Picks the provider for `provider/model`; throws ProviderNotConfiguredError naming what to set. */
export function resolveProvider(config: Config, modelId: string): ResolvedProvider {
  let ofConfig = resolved.get(config);
  if (!ofConfig) resolved.set(config, (ofConfig = new Map()));
  const known = ofConfig.get(modelId);
  if (known) return known;
  const made = makeProvider(config, modelId);
  ofConfig.set(modelId, made);
  return made;
}

function makeProvider(config: Config, modelId: string): ResolvedProvider {
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
  const provider = entry.create({ apiKey, baseUrl, timeoutMs: config.models.requestTimeoutSeconds * 1000 });
  return { provider: tracedProvider(observed(config, modelId, provider), name), model };
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
