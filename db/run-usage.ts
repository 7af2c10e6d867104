import type { EntityManager } from 'typeorm';
import type { RunEventPayloads } from '../core/run-events';
import { INSERT_RUN_EVENT, runEventParameters } from './run-events';

/** The `SET` that adds tokens, and a cost when the model has a price, to a run's usage. */
const addUsage = (tokens: string, cost: string) =>
  `total_tokens = total_tokens + ${tokens},
   inference_cost_usd = CASE WHEN ${cost}::numeric IS NULL THEN inference_cost_usd ELSE COALESCE(inference_cost_usd, 0) + ${cost}::numeric END`;

/** Adds a model call's tokens to a run's usage and, when the model has a price (`costUsd`), its cost. */
export async function addRunUsage(
  manager: EntityManager,
  runId: string,
  tokens: number,
  costUsd: number | null,
): Promise<void> {
  await manager.query(`UPDATE runs SET ${addUsage('$2', '$3')} WHERE run_id = $1`, [runId, tokens, costUsd]);
}

/**
 * Records a model's reply once and, when this wrote it, adds its usage to the run's: one
 * statement, so one round trip and atomic without a transaction of its own. False when the
 * run already had a reply under this key (another attempt of the step recorded its own first).
 */
export async function appendReplyWithUsage(
  manager: EntityManager,
  reply: { runId: string; eventKey: string; turn: number; payload: RunEventPayloads['assistant'] },
  tokens: number,
  costUsd: number | null,
): Promise<boolean> {
  // A data-modifying WITH runs exactly once, whether or not the query reads it.
  const [row] = (await manager.query(
    `WITH reply AS (${INSERT_RUN_EVENT}),
          usage AS (UPDATE runs SET ${addUsage('$6', '$7')} WHERE run_id = $1 AND EXISTS (SELECT 1 FROM reply))
     SELECT EXISTS (SELECT 1 FROM reply) AS wrote`,
    [...runEventParameters({ ...reply, kind: 'assistant' }), tokens, costUsd],
  )) as { wrote: boolean }[];
  return row?.wrote === true;
}
