import type { EntityManager } from 'typeorm';

export interface ExternalReference {
  kind: 'EXTERNAL_REFERENCE';
  runId: string;
  url: string;
  referenceType: string;
  title: string | null;
  createdAt: Date;
}

function toReference(row: Record<string, unknown>): ExternalReference {
  return {
    kind: 'EXTERNAL_REFERENCE',
    runId: row.run_id as string,
    url: row.url as string,
    referenceType: row.reference_type as string,
    title: (row.title as string | null) ?? null,
    createdAt: row.created_at as Date,
  };
}

/** The external references of each of `runIds`, oldest first. */
export async function externalReferencesOfRuns(manager: EntityManager, runIds: string[]): Promise<ExternalReference[]> {
  if (runIds.length === 0) return [];
  const rows = (await manager.query(
    `SELECT run_id, url, reference_type, title, created_at FROM run_external_references
      WHERE run_id = ANY($1::uuid[]) ORDER BY created_at, url`,
    [runIds],
  )) as Record<string, unknown>[];
  return rows.map(toReference);
}

/** The run of the team that reported `url` (canonical) most recently, and when; null when none did. */
export async function findRunByExternalReference(
  manager: EntityManager,
  teamId: string,
  url: string,
): Promise<{ runId: string; createdAt: Date } | null> {
  const [row] = (await manager.query(
    `SELECT run_id, created_at FROM run_external_references WHERE team_id = $1 AND url = $2 ORDER BY created_at DESC LIMIT 1`,
    [teamId, url],
  )) as { run_id: string; created_at: Date }[];
  return row ? { runId: row.run_id, createdAt: row.created_at } : null;
}
