import type { EntityManager } from 'typeorm';

/** Records what a run reported it made at `url` (canonical); reporting it again updates its type and title. */
export async function recordExternalReference(
  manager: EntityManager,
  ref: { runId: string; url: string; referenceType: string; title: string | null },
): Promise<void> {
  await manager.query(
    `INSERT INTO run_external_references (run_id, team_id, url, reference_type, title)
     SELECT run_id, team_id, $2, $3, $4 FROM runs WHERE run_id = $1
     ON CONFLICT (run_id, url) DO UPDATE SET reference_type = EXCLUDED.reference_type, title = EXCLUDED.title`,
    [ref.runId, ref.url, ref.referenceType, ref.title],
  );
}
