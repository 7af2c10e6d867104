import type { Config } from '../../core/config';

/** What a model call cost in USD, or null when the model has no price. */
export function modelCostUsd(
  config: Config,
  modelId: string,
  inputTokens: number,
  outputTokens: number,
): number | null {
  const price = config.models.prices[modelId];
  return price ? (inputTokens * price.input + outputTokens * price.output) / 1_000_000 : null;
}
