import type { EntityManager } from 'typeorm';

/** Adds a model call's tokens to a run's usage and, when the model has a price (`costUsd`), its cost. */
export async function addRunUsage(
  manager: EntityManager,
  runId: string,
  tokens: number,
  costUsd: number | null,
): Promise<void> {
  await manager.query(
    `UPDATE runs SET total_tokens = total_tokens + $2,
            inference_cost_usd = CASE WHEN $3::numeric IS NULL THEN inference_cost_usd ELSE COALESCE(inference_cost_usd, 0) + $3::numeric END
      WHERE run_id = $1`,
    [runId, tokens, costUsd],
  );
}
