import type { EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import { storableText } from './storable';
import { PLAN_COLUMNS, toPlan, type PlanArtifact } from './plan-reads';

/**
 * Records the next version of the run's plan, once per `sourceKey` (the tool call or final answer
 * that made it): the same key again (a retried step) returns the version recorded the first time.
 * The run's first plan starts its document; later ones keep its `document_uid`. A run's steps run
 * one at a time, so versions are not raced for; the unique (run_id, version) says so if they were.
 */
export async function recordPlan(
  manager: EntityManager,
  input: { runId: string; turn: number; sourceKey: string; title: string; markdown: string },
): Promise<PlanArtifact> {
  const inserted = (await manager.query(
    `INSERT INTO run_plans (artifact_uid, run_id, team_id, turn, source_key, document_uid, version, title, markdown)
     SELECT $1, r.run_id, r.team_id, $3, $4, COALESCE(p.document_uid, $5), COALESCE(p.version, 0) + 1, $6, $7
       FROM runs r
       LEFT JOIN LATERAL (SELECT document_uid, version FROM run_plans WHERE run_id = r.run_id
                           ORDER BY version DESC LIMIT 1) p ON true
      WHERE r.run_id = $2
     ON CONFLICT (run_id, source_key) DO NOTHING
     RETURNING ${PLAN_COLUMNS}`,
    [
      newUuidV7(),
      input.runId,
      input.turn,
      input.sourceKey,
      newUuidV7(),
      storableText(input.title),
      storableText(input.markdown),
    ],
  )) as Record<string, unknown>[];
  if (inserted[0]) return toPlan(inserted[0]);
  const [existing] = (await manager.query(
    `SELECT ${PLAN_COLUMNS} FROM run_plans WHERE run_id = $1 AND source_key = $2`,
    [input.runId, input.sourceKey],
  )) as Record<string, unknown>[];
  return toPlan(existing!);
}
