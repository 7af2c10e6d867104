/** The model providers this service speaks to; a `model_id` is `<provider>/<model>`. */
export const MODEL_PROVIDERS = ['openai', 'anthropic'] as const;
export type ModelProviderName = (typeof MODEL_PROVIDERS)[number];

export function modelProviderOf(modelId: string): string {
  return modelId.slice(0, modelId.indexOf('/'));
}

export function isKnownModelProvider(modelId: string): boolean {
  return (MODEL_PROVIDERS as readonly string[]).includes(modelProviderOf(modelId));
}
