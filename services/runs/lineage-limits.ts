import type { EntityManager } from 'typeorm';
import type { Config } from '../../core/config';
import { countChildren, runDepth } from '../../db/run-lineage-reads';

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

/**
 * Why one more child is refused, in the words of who asked: a `parent_run_id` sent to the API,
 * or a factory agent's `dispatch_agent` (told what to do instead).
 */
export function lineageRefusal(
  refused: Exclude<LineageCheck, { ok: true }>,
  parentRunId: string,
  asker: 'parent_run_id' | 'dispatch_agent',
): string {
  if (asker === 'dispatch_agent') {
    return refused.limit === 'depth'
      ? `this run is already ${refused.parentDepth} level(s) below its root run, and runs may be at most ${refused.max} levels deep (ORCHESTRATION_MAX_DEPTH). Do this part of the work yourself.`
      : `this run already dispatched ${refused.children} runs, the most one run may (ORCHESTRATION_MAX_CHILDREN_PER_RUN). Wait for them and reuse their results, or do the work yourself.`;
  }
  return refused.limit === 'depth'
    ? `\`parent_run_id\`: run ${parentRunId} is already ${refused.parentDepth} level(s) below its root run; this service allows at most ${refused.max} (ORCHESTRATION_MAX_DEPTH).`
    : `\`parent_run_id\`: run ${parentRunId} already has ${refused.children} child runs, the most one run may have (ORCHESTRATION_MAX_CHILDREN_PER_RUN).`;
}
