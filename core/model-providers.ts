import type { Config } from './config';

/** The model providers this service speaks to; a `model_id` is `<provider>/<model>`. */
export const MODEL_PROVIDERS = ['openai', 'anthropic'] as const;
export type ModelProviderName = (typeof MODEL_PROVIDERS)[number];

/** The variable that gives a provider its key. */
export const MODEL_PROVIDER_KEY_VARIABLES: Record<ModelProviderName, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
};

/** The providers whose key is configured. */
export function configuredModelProviders(config: Config): ModelProviderName[] {
  return MODEL_PROVIDERS.filter((name) => config.models[name].apiKey !== undefined);
}

export function modelProviderOf(modelId: string): string {
  return modelId.slice(0, modelId.indexOf('/'));
}

export function isKnownModelProvider(modelId: string): boolean {
  return (MODEL_PROVIDERS as readonly string[]).includes(modelProviderOf(modelId));
}
