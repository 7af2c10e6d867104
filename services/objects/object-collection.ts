import type { DataSource } from 'typeorm';
import {
  collectorState,
  forgetUnreferenced,
  recordPartitionCollected,
  sortUnreferenced,
} from '../../db/object-references';
import type { ObjectStore } from '../../infra/object-store/object-store';

/** Keys the collector weighs at once: one short transaction each. */
const BATCH = 1000;
/** The content-addressed keys' partitions: their first two hex digits. */
const PARTITIONS = 256;

/** What a pass of the collector went through and did, and the store as its last whole cycle counted it. */
export interface CollectionResult {
  partitions: number;
  deleted: number;
  deletedBytes: number;
  storeObjects: number | null;
  storeBytes: number | null;
}

/**
 * Removes from the object store what no row names any more (the files of deleted runs, replaced
 * handoff patches, checkpoints of deleted runs, objects of steps whose transaction never
 * committed). An object is deleted only when two passes at least `graceSeconds` apart both found
 * it unnamed: an object is written before the row that names it, and a checkpoint that reuses an
 * object names it within seconds. Goes through the keys a partition at a time until `budgetMs`
 * is spent, and the next pass goes on from there, so that a firing ends in minutes however large
 * the store is.
 */
export async function collectUnreferencedObjects(
  dataSource: DataSource,
  store: ObjectStore,
  options: { graceSeconds: number; budgetMs: number; heartbeat?: () => void },
): Promise<CollectionResult> {
  const until = Date.now() + options.budgetMs;
  const result = { partitions: 0, deleted: 0, deletedBytes: 0 };
  let partition = (await collectorState(dataSource.manager)).nextPartition;
  do {
    const counted = await collectPartition(dataSource, store, partition, options, result);
    partition = (partition + 1) % PARTITIONS;
    await recordPartitionCollected(dataSource.manager, partition, counted);
    result.partitions++;
  } while (Date.now() < until && result.partitions < PARTITIONS);
  const state = await collectorState(dataSource.manager);
  return { ...result, storeObjects: state.lastObjects, storeBytes: state.lastBytes };
}

async function collectPartition(
  dataSource: DataSource,
  store: ObjectStore,
  partition: number,
  options: { graceSeconds: number; heartbeat?: () => void },
  result: { deleted: number; deletedBytes: number },
): Promise<{ objects: number; bytes: number }> {
  const counted = { objects: 0, bytes: 0 };
  let batch: { key: string; size: number }[] = [];
  const weigh = async () => {
    const sizes = new Map(batch.map((o) => [o.key, o.size]));
    const keys = batch.map((o) => o.key);
    const { collectable } = await dataSource.transaction((tx) => sortUnreferenced(tx, keys, options.graceSeconds));
    if (collectable.length) {
      await store.delete(collectable);
      await forgetUnreferenced(dataSource.manager, collectable);
      result.deleted += collectable.length;
      for (const key of collectable) result.deletedBytes += sizes.get(key) ?? 0;
    }
    batch = [];
    options.heartbeat?.();
  };
  for await (const object of store.list(`sha256/${partition.toString(16).padStart(2, '0')}/`)) {
    counted.objects++;
    counted.bytes += object.size;
    batch.push({ key: object.key, size: object.size });
    if (batch.length >= BATCH) await weigh();
  }
  if (batch.length) await weigh();
  return counted;
}
