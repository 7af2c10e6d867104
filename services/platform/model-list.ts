import type { Config } from '../../core/config';
import { MODEL_PROVIDER_KEY_VARIABLES, modelProviderOf, type ModelProviderName } from '../../core/model-providers';

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
