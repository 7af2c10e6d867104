import type { EntityManager } from 'typeorm';
import type { Config } from '../../core/config';
import { countChildren, runDepth } from '../../db/run-lineage';

/** Whether one more child may be made under `parentRunId` (ORCHESTRATION_MAX_DEPTH, ORCHESTRATION_MAX_CHILDREN_PER_RUN). */
export type LineageCheck =
  | { ok: true; depth: number }
  | { ok: false; limit: 'depth'; parentDepth: number; max: number }
  | { ok: false; limit: 'children'; children: number; max: number };

/**
 * The one check of a run tree's bounds, for a `parent_run_id` given through the API and for a
 * factory agent's `dispatch_agent` alike; each says no in its own words.
 */
export async function checkLineage(
  manager: EntityManager,
  parentRunId: string,
  limits: Config['orchestration'],
): Promise<LineageCheck> {
  const depth = (await runDepth(manager, parentRunId)) + 1;
  if (depth > limits.maxDepth) return { ok: false, limit: 'depth', parentDepth: depth - 1, max: limits.maxDepth };
  const children = await countChildren(manager, parentRunId);
  if (children >= limits.maxChildrenPerRun) {
    return { ok: false, limit: 'children', children, max: limits.maxChildrenPerRun };
  }
  return { ok: true, depth };
}
