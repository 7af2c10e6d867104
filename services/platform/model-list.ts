import { invalid } from '../../core/api-error';
import type { Config } from '../../core/config';
import {
  isKnownModelProvider,
  MODEL_PROVIDER_KEY_VARIABLES,
  MODEL_PROVIDERS,
  modelProviderOf,
  type ModelProviderName,
} from '../../core/model-providers';

/** The provider names of the official clients' `Model.provider`. */
const CLIENT_PROVIDER: Record<string, 'OPENAI' | 'ANTHROPIC' | 'GOOGLE'> = {
  openai: 'OPENAI',
  anthropic: 'ANTHROPIC',
  gemini: 'GOOGLE',
};
const PROVIDER_TITLE: Record<string, string> = { openai: 'OpenAI', anthropic: 'Anthropic', gemini: 'Google' };

export interface ListedModel {
  id: string;
  display_name: string;
  provider: 'OPENAI' | 'ANTHROPIC' | 'GOOGLE' | 'UNKNOWN';
  vision_supported: boolean;
  description?: string;
  disable_reason?: 'ADMIN_DISABLED';
}

/**
 * `GET /agent/models`: the models a run of this deployment can name as `config.model_id` — those
 * it knows (prices, context windows, the default) of the providers whose key is configured. The
 * default is always listed; without its provider's key it says so (`ADMIN_DISABLED`). The step
 * loop sends text only, so no model is listed as taking images.
 */
export function listModels(config: Config): { default_model_id: string; models: ListedModel[] } {
  const { models } = config;
  const runnable = (id: string) => {
    const provider = modelProviderOf(id) as ModelProviderName;
    return provider in MODEL_PROVIDER_KEY_VARIABLES && models[provider].apiKey !== undefined;
  };
  const ids = [...new Set([models.defaultModel, ...Object.keys(models.prices), ...Object.keys(models.contextTokens)])]
    .filter((id) => id === models.defaultModel || runnable(id))
    .sort((a, b) => (a === models.defaultModel ? -1 : b === models.defaultModel ? 1 : a.localeCompare(b)));
  return {
    default_model_id: models.defaultModel,
    models: ids.map((id) => {
      const provider = modelProviderOf(id);
      const name = id.slice(provider.length + 1) || id;
      const keyVariable = MODEL_PROVIDER_KEY_VARIABLES[provider as ModelProviderName];
      return {
        id,
        display_name: PROVIDER_TITLE[provider] ? `${name} (${PROVIDER_TITLE[provider]})` : name,
        provider: CLIENT_PROVIDER[provider] ?? 'UNKNOWN',
        vision_supported: false,
        ...(id === models.defaultModel ? { description: 'The default model of runs that do not name one.' } : {}),
        ...(runnable(id)
          ? {}
          : {
              disable_reason: 'ADMIN_DISABLED' as const,
              description: keyVariable
                ? `The default model, but ${keyVariable} is not configured: runs that do not name a model fail.`
                : `The default model, of a provider this service does not speak to: runs that do not name a model fail.`,
            }),
      };
    }),
  };
}

/**
 * The models this deployment serves: its default and every model it has a price or a context
 * window for (built in, `MODEL_PRICES`, `MODEL_CONTEXT_TOKENS`), of a provider it speaks to.
 * Whether the provider's key is set is the worker's to say (it holds the keys): a run on a model
 * whose key is missing fails there, naming the variable.
 */
export function servedModelIds(config: Config): string[] {
  const { models } = config;
  return [...new Set([models.defaultModel, ...Object.keys(models.prices), ...Object.keys(models.contextTokens)])]
    .filter(isKnownModelProvider)
    .sort();
}

/**
 * Throws a 400 naming `field` when `modelId` is not a model this deployment serves, listing
 * those it does (the same as `GET /agent/models` where the providers' keys are set). Every
 * writer of a model id (runs, schedules, agent identities, factory agents) checks through it.
 */
export function assertServedModel(config: Config, modelId: string, field: string): void {
  const problem = servedModelProblem(config, modelId);
  if (problem) throw invalid(`\`${field}\`: ${problem}.`);
}

/** Why `modelId` cannot be served here, in words that say what to send instead; undefined when it can. */
export function servedModelProblem(config: Config, modelId: string): string | undefined {
  return modelProblemAmong(servedModelIds(config), modelId);
}

/** servedModelProblem against a list of served models (servedModelIds), as plain data: what the parse child is given. */
export function modelProblemAmong(served: readonly string[], modelId: string): string | undefined {
  if (!isKnownModelProvider(modelId)) {
    return `this service has no provider "${modelProviderOf(modelId)}"; use ${MODEL_PROVIDERS.map((p) => `\`${p}/<model>\``).join(' or ')}`;
  }
  if (served.includes(modelId)) return undefined;
  return (
    `this service does not serve the model "${modelId}"; it serves ${served.map((id) => `\`${id}\``).join(', ')} ` +
    '(`GET /api/v1/agent/models` lists them; an operator adds a model with `MODEL_CONTEXT_TOKENS`)'
  );
}
