import type { EntityManager } from 'typeorm';

export interface RunImage {
  reference: string;
  digest: string;
}

/** The image digest a run was first provisioned on, if any. */
export async function findRunImage(manager: EntityManager, runId: string): Promise<RunImage | undefined> {
  const rows = (await manager.query(
    `SELECT image_reference, image_digest FROM runs WHERE run_id = $1 AND image_digest IS NOT NULL`,
    [runId],
  )) as { image_reference: string; image_digest: string }[];
  return rows[0] ? { reference: rows[0].image_reference, digest: rows[0].image_digest } : undefined;
}

/** Records the digest a run's image resolved to; a digest already recorded stays. */
export async function recordRunImage(manager: EntityManager, runId: string, image: RunImage): Promise<void> {
  await manager.query(
    `UPDATE runs SET image_reference = $2, image_digest = $3 WHERE run_id = $1 AND image_digest IS NULL`,
    [runId, image.reference, image.digest],
  );
}
