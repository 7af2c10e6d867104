import type { EntityManager } from 'typeorm';

/** Of `keys`, those no row names: no file's blob, no checkpoint. */
const UNREFERENCED = `
  SELECT k.key FROM unnest($1::text[]) AS k(key)
  WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.object_key = k.key)
    AND NOT EXISTS (SELECT 1 FROM checkpoint_objects c WHERE c.object_key = k.key)`;

/**
 * One pass of the collector over a batch of the store's keys, in one transaction: marks those
 * no row names (a first sighting), and answers those a mark says were already unnamed at least
 * `graceSeconds` ago and still are (to delete). Marks of keys named again are dropped.
 */
export async function sortUnreferenced(
  tx: EntityManager,
  keys: string[],
  graceSeconds: number,
): Promise<{ collectable: string[] }> {
  const unreferenced = ((await tx.query(UNREFERENCED, [keys])) as { key: string }[]).map((r) => r.key);
  const named = keys.filter((k) => !unreferenced.includes(k));
  if (named.length) await tx.query(`DELETE FROM unreferenced_objects WHERE object_key = ANY($1::text[])`, [named]);
  if (unreferenced.length === 0) return { collectable: [] };
  const rows = (await tx.query(
    `WITH marked AS (
       INSERT INTO unreferenced_objects (object_key, seen_at)
       SELECT key, clock_timestamp() FROM unnest($1::text[]) AS k(key)
       ON CONFLICT (object_key) DO UPDATE SET seen_at = unreferenced_objects.seen_at
       RETURNING object_key, seen_at
     )
     SELECT object_key FROM marked WHERE seen_at <= clock_timestamp() - make_interval(secs => $2)`,
    [unreferenced, graceSeconds],
  )) as { object_key: string }[];
  return { collectable: rows.map((r) => r.object_key) };
}

/** The objects were deleted: their marks go. */
export async function forgetUnreferenced(manager: EntityManager, keys: string[]): Promise<void> {
  if (keys.length) await manager.query(`DELETE FROM unreferenced_objects WHERE object_key = ANY($1::text[])`, [keys]);
}

export interface CollectorState {
  nextPartition: number;
  /** The store as the last whole cycle counted it; null before one ended. */
  lastObjects: number | null;
  lastBytes: number | null;
}

export async function collectorState(manager: EntityManager): Promise<CollectorState> {
  const [row] = (await manager.query(`SELECT next_partition, last_objects, last_bytes FROM object_collector`)) as {
    next_partition: number;
    last_objects: string | null;
    last_bytes: string | null;
  }[];
  return {
    nextPartition: row?.next_partition ?? 0,
    lastObjects: row?.last_objects == null ? null : Number(row.last_objects),
    lastBytes: row?.last_bytes == null ? null : Number(row.last_bytes),
  };
}

/** A partition was gone through: counts it in the cycle, and a cycle that came round is the store's last count. */
export async function recordPartitionCollected(
  manager: EntityManager,
  next: number,
  counted: { objects: number; bytes: number },
): Promise<void> {
  await manager.query(
    `UPDATE object_collector SET
       next_partition = $1,
       last_objects = CASE WHEN $1 = 0 THEN cycle_objects + $2 ELSE last_objects END,
       last_bytes = CASE WHEN $1 = 0 THEN cycle_bytes + $3 ELSE last_bytes END,
       cycle_objects = CASE WHEN $1 = 0 THEN 0 ELSE cycle_objects + $2 END,
       cycle_bytes = CASE WHEN $1 = 0 THEN 0 ELSE cycle_bytes + $3 END`,
    [next, counted.objects, counted.bytes],
  );
}
