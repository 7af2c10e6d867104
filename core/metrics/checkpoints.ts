import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry } from './registry';

/** Checkpoints of runs' files: how long they take, what they store, and runs resumed from them. */

export const checkpointDuration = new Histogram({
  name: 'agent_runs_checkpoint_seconds',
  help: "Time to take a checkpoint of a run's files after a step (walk, store, record), including those that found nothing changed.",
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

export const checkpointBytesAdded = new Counter({
  name: 'agent_runs_checkpoint_bytes_added_total',
  help: 'Bytes checkpoints stored anew in the object store (what no earlier object held).',
  registers: [metricsRegistry],
});

export const checkpointsTaken = new Counter({
  name: 'agent_runs_checkpoints_total',
  help: 'Checkpoints by outcome: recorded, unchanged (nothing changed since the last), failed (the run went on without it), over_team_storage (its team keeps TEAM_MAX_STORED_BYTES).',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const checkpointRestores = new Counter({
  name: 'agent_runs_checkpoint_restores_total',
  help: "Runs' files made again from a checkpoint, by why: resume (another workspace for the same run) or fork.",
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const objectStoreBytes = new Gauge({
  name: 'agent_runs_object_store_bytes',
  help: "Bytes in the object store of runs' files, as the collector's last pass counted them (before it deleted any).",
  registers: [metricsRegistry],
});

export const objectStoreObjects = new Gauge({
  name: 'agent_runs_object_store_objects',
  help: "Objects in the object store of runs' files, as the collector's last pass counted them.",
  registers: [metricsRegistry],
});

export const objectsCollected = new Counter({
  name: 'agent_runs_object_store_collected_bytes_total',
  help: 'Bytes the collector removed from the object store: objects no row named for a grace period.',
  registers: [metricsRegistry],
});
