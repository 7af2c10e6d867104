import type { EntityManager } from 'typeorm';

/** Records that the worker serving `workspaceQueue` is alive, with how many runs it works on. */
export async function renewWorkerLease(
  manager: EntityManager,
  lease: { workspaceQueue: string; capacity: number; inUse: number },
): Promise<void> {
  await manager.query(
    `INSERT INTO worker_leases (workspace_queue, renewed_at, capacity, in_use) VALUES ($1, clock_timestamp(), $2, $3)
     ON CONFLICT (workspace_queue) DO UPDATE SET renewed_at = EXCLUDED.renewed_at, capacity = EXCLUDED.capacity, in_use = EXCLUDED.in_use`,
    [lease.workspaceQueue, lease.capacity, lease.inUse],
  );
}

/** Seconds since the worker of `workspaceQueue` last renewed its lease; null when it never did. */
export async function secondsSinceLeaseRenewed(manager: EntityManager, workspaceQueue: string): Promise<number | null> {
  const [row] = (await manager.query(
    `SELECT EXTRACT(EPOCH FROM clock_timestamp() - renewed_at)::float8 AS age FROM worker_leases WHERE workspace_queue = $1`,
    [workspaceQueue],
  )) as { age: number }[];
  return row ? row.age : null;
}
