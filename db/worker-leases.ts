import type { EntityManager } from 'typeorm';

/** Records that the worker serving `workspaceQueue` is alive, with how many runs it holds. */
export async function renewWorkerLease(
  manager: EntityManager,
  lease: { workspaceQueue: string; capacity: number; held: number },
): Promise<void> {
  await manager.query(
    `INSERT INTO worker_leases (workspace_queue, renewed_at, capacity, held) VALUES ($1, clock_timestamp(), $2, $3)
     ON CONFLICT (workspace_queue) DO UPDATE SET renewed_at = EXCLUDED.renewed_at, capacity = EXCLUDED.capacity, held = EXCLUDED.held`,
    [lease.workspaceQueue, lease.capacity, lease.held],
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
