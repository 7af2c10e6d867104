import type { EntityManager } from 'typeorm';

/** How long ago the run that ended longest ago (of those kept) ended, in seconds; 0 when none has. One index probe. */
export async function oldestEndedRunSeconds(manager: EntityManager): Promise<number> {
  const [row] = (await manager.query(
    `SELECT coalesce(extract(epoch FROM clock_timestamp() - min(ended_at)), 0)::float8 AS seconds
       FROM runs WHERE ended_at IS NOT NULL`,
  )) as { seconds: number }[];
  return row?.seconds ?? 0;
}
