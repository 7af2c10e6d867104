import type { EntityManager } from 'typeorm';

/** A version of a run's plan: a `PLAN` artifact (db/plans.ts records them). */
export interface PlanArtifact {
  kind: 'PLAN';
  artifactUid: string;
  runId: string;
  teamId: string;
  turn: number;
  /** The run's plan document: the same for every version. */
  documentUid: string;
  version: number;
  title: string;
  markdown: string;
  createdAt: Date;
}

export const PLAN_COLUMNS = `artifact_uid, run_id, team_id, turn, document_uid, version, title, markdown, created_at`;

/** Maps a raw `run_plans` row to the plan. */
export function toPlan(row: Record<string, unknown>): PlanArtifact {
  return {
    kind: 'PLAN',
    artifactUid: row.artifact_uid as string,
    runId: row.run_id as string,
    teamId: row.team_id as string,
    turn: Number(row.turn),
    documentUid: row.document_uid as string,
    version: Number(row.version),
    title: row.title as string,
    // A webhook's snapshot leaves the markdown out.
    markdown: (row.markdown as string | null) ?? '',
    createdAt: row.created_at as Date,
  };
}

/** A plan version of a team (null for another team's, as for none). */
export async function findPlan(
  manager: EntityManager,
  artifactUid: string,
  teamId: string,
): Promise<PlanArtifact | null> {
  const rows = (await manager.query(`SELECT ${PLAN_COLUMNS} FROM run_plans WHERE artifact_uid = $1 AND team_id = $2`, [
    artifactUid,
    teamId,
  ])) as Record<string, unknown>[];
  return rows[0] ? toPlan(rows[0]) : null;
}

/** The plan versions of each of `runIds`, oldest first. */
export async function plansOfRuns(manager: EntityManager, runIds: string[]): Promise<PlanArtifact[]> {
  if (runIds.length === 0) return [];
  const rows = (await manager.query(
    `SELECT ${PLAN_COLUMNS} FROM run_plans WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, version`,
    [runIds],
  )) as Record<string, unknown>[];
  return rows.map(toPlan);
}

/** The newest plan version the run's `turn` made, if it made one. */
export async function planOfTurn(manager: EntityManager, runId: string, turn: number): Promise<PlanArtifact | null> {
  const rows = (await manager.query(
    `SELECT ${PLAN_COLUMNS} FROM run_plans WHERE run_id = $1 AND turn = $2 ORDER BY version DESC LIMIT 1`,
    [runId, turn],
  )) as Record<string, unknown>[];
  return rows[0] ? toPlan(rows[0]) : null;
}

/** The newest version of the run's plan, if it has one. */
export async function latestPlan(manager: EntityManager, runId: string): Promise<PlanArtifact | null> {
  const rows = (await manager.query(
    `SELECT ${PLAN_COLUMNS} FROM run_plans WHERE run_id = $1 ORDER BY version DESC LIMIT 1`,
    [runId],
  )) as Record<string, unknown>[];
  return rows[0] ? toPlan(rows[0]) : null;
}

/** Whether the run recorded a plan under one of `sourceKeys`. */
export async function anyPlanRecorded(manager: EntityManager, runId: string, sourceKeys: string[]): Promise<boolean> {
  const rows = (await manager.query(
    `SELECT 1 FROM run_plans WHERE run_id = $1 AND source_key = ANY($2::text[]) LIMIT 1`,
    [runId, sourceKeys],
  )) as unknown[];
  return rows.length > 0;
}
