import { statfs } from 'node:fs/promises';
import { Gauge, Registry } from 'prom-client';

/**
 * A worker's room: its run slots (WORKER_MAX_CONCURRENT_RUNS) and the free disk where its
 * runs' workspaces are, read when scraped. Served by workers alone (the worker's `/metrics`, and
 * the API's under `npm start`), so an API never reports a disk or slots it does not have.
 */

export interface WorkerCapacitySources {
  /** Runs this worker works on (and provisionings in flight), of how many it takes at once. */
  slots: () => { used: number; capacity: number };
  /** WORKSPACE_DIR: the filesystem whose free bytes count. */
  workspaceDir: string;
}

/** The Prometheus text of the worker's room, for its `/metrics` to append to the registry's. */
export function workerCapacityMetrics(sources: WorkerCapacitySources) {
  const slotsRegistry = new Registry();
  const slots = new Gauge({
    name: 'agent_runs_worker_run_slots',
    help: "This worker's run slots (WORKER_MAX_CONCURRENT_RUNS) by state: used (runs worked on, provisionings in flight) or free.",
    labelNames: ['state'] as const,
    registers: [slotsRegistry],
  });
  const diskRegistry = new Registry();
  const free = new Gauge({
    name: 'agent_runs_worker_workspace_disk_free_bytes',
    help: "Bytes free (to unprivileged writers) on the filesystem of this worker's WORKSPACE_DIR.",
    registers: [diskRegistry],
  });
  const size = new Gauge({
    name: 'agent_runs_worker_workspace_disk_size_bytes',
    help: "Size in bytes of the filesystem of this worker's WORKSPACE_DIR.",
    registers: [diskRegistry],
  });
  return async (): Promise<string> => {
    const { used, capacity } = sources.slots();
    slots.set({ state: 'used' }, used);
    slots.set({ state: 'free' }, Math.max(0, capacity - used));
    // A filesystem that cannot be read is left out of the scrape rather than reported empty.
    const disk = await statfs(sources.workspaceDir).catch(() => undefined);
    if (!disk) return slotsRegistry.metrics();
    free.set(disk.bavail * disk.bsize);
    size.set(disk.blocks * disk.bsize);
    return `${await slotsRegistry.metrics()}\n${await diskRegistry.metrics()}`;
  };
}
