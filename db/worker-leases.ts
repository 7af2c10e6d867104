import type { EntityManager } from 'typeorm';

/** Records that the worker serving `workspaceQueue` is alive, with how many runs it works on. */
export async function renewWorkerLease(
  manager: EntityManager,
  lease: { workspaceQueue: string; capacity: number; inUse: number; leaseSeconds: number },
): Promise<void> {
  await manager.query(
    `INSERT INTO worker_leases (workspace_queue, renewed_at, capacity, in_use, lease_seconds)
     VALUES ($1, clock_timestamp(), $2, $3, $4)
     ON CONFLICT (workspace_queue) DO UPDATE SET renewed_at = EXCLUDED.renewed_at, capacity = EXCLUDED.capacity,
            in_use = EXCLUDED.in_use, lease_seconds = EXCLUDED.lease_seconds`,
    [lease.workspaceQueue, lease.capacity, lease.inUse, lease.leaseSeconds],
  );
}

export interface LeaseStatus {
  /** Seconds since this queue's worker renewed its lease; null when it never did. */
  age: number | null;
  /** The lease length that worker renews for (its WORKER_LEASE_SECONDS). */
  leaseSeconds: number | null;
  /** Seconds since any worker renewed its lease: large when the database, not a worker, was away. */
  freshestAge: number | null;
}

export async function leaseStatus(manager: EntityManager, workspaceQueue: string): Promise<LeaseStatus> {
  const [row] = (await manager.query(
    `SELECT (SELECT EXTRACT(EPOCH FROM clock_timestamp() - renewed_at)::float8 FROM worker_leases WHERE workspace_queue = $1) AS age,
            (SELECT lease_seconds FROM worker_leases WHERE workspace_queue = $1) AS lease_seconds,
            (SELECT EXTRACT(EPOCH FROM clock_timestamp() - max(renewed_at))::float8 FROM worker_leases) AS freshest_age`,
    [workspaceQueue],
  )) as { age: number | null; lease_seconds: number | null; freshest_age: number | null }[];
  return { age: row?.age ?? null, leaseSeconds: row?.lease_seconds ?? null, freshestAge: row?.freshest_age ?? null };
}

/** WORKER_IDs of the workers on `workspaceQueuePrefix` (`<task queue>/workspaces@`) whose lease is current. */
export async function liveWorkerIds(manager: EntityManager, workspaceQueuePrefix: string): Promise<string[]> {
  const rows = (await manager.query(
    `SELECT substr(workspace_queue, length($1) + 1) AS id FROM worker_leases
      WHERE starts_with(workspace_queue, $1) AND renewed_at > clock_timestamp() - make_interval(secs => lease_seconds)
      ORDER BY 1`,
    [workspaceQueuePrefix],
  )) as { id: string }[];
  return rows.map((r) => r.id);
}

/**
 * Gives up the lease of a worker that stopped on purpose (drained): a task still waiting on its
 * queue finds it gone at once, instead of after its lease would have lapsed.
 */
export async function releaseWorkerLease(manager: EntityManager, workspaceQueue: string): Promise<void> {
  await manager.query(`DELETE FROM worker_leases WHERE workspace_queue = $1`, [workspaceQueue]);
}
