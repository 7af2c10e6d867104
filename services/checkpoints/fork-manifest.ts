import type { EntityManager } from 'typeorm';
import { checkpointObjectSizes, type CheckpointRow } from '../../db/checkpoint-reads';
import { contentKey, type ObjectStore } from '../../infra/object-store/object-store';
import { checkpointEntries } from './checkpoint-entries';
import { encodeManifest, objectsOf } from './checkpoint-manifest';

/** What a fork's first checkpoint is: a full manifest of the source's files and every object it names. */
export interface ForkManifest {
  manifestKey: string;
  files: number;
  bytes: number;
  /** The manifest and every pack and chunk its entries name: held for the fork whatever becomes of its source. */
  objects: { key: string; size: number }[];
}

/**
 * Stores the full manifest of `checkpoint` as a fork's own (content-addressed: forking the same
 * checkpoint twice stores it once). Nothing else is copied: the fork names the source's objects.
 */
export async function writeForkManifest(
  manager: EntityManager,
  store: ObjectStore,
  checkpoint: CheckpointRow,
): Promise<ForkManifest> {
  const entries = await checkpointEntries(manager, store, checkpoint);
  const manifest = encodeManifest({ version: 1, full: true, entries, deleted: [] });
  const manifestKey = contentKey(manifest);
  await store.put(manifestKey, manifest);
  const sizes = await checkpointObjectSizes(manager, [...objectsOf(entries)]);
  return {
    manifestKey,
    files: checkpoint.files,
    bytes: checkpoint.bytes,
    objects: [{ key: manifestKey, size: manifest.length }, ...sizes],
  };
}
