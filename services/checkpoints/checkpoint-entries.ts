import type { EntityManager } from 'typeorm';
import { checkpointChain, type CheckpointRow } from '../../db/checkpoint-reads';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { composeManifests, decodeManifest, type ManifestDocument, type ManifestEntry } from './checkpoint-manifest';

/** The manifests a checkpoint is composed of: its own and its parents' back to the nearest full one, oldest first. */
export async function checkpointDocuments(
  manager: EntityManager,
  store: ObjectStore,
  checkpoint: Pick<CheckpointRow, 'checkpointId'>,
): Promise<ManifestDocument[]> {
  const chain = await checkpointChain(manager, checkpoint.checkpointId);
  return Promise.all(
    chain.map(async (c) => {
      const bytes = await store.get(c.manifestKey);
      if (!bytes) throw new Error(`the manifest of checkpoint ${c.checkpointId} is missing from the object store`);
      return decodeManifest(bytes);
    }),
  );
}

/** Every entry a checkpoint holds (its run's `workspace/` and `home/`), in path order. */
export async function checkpointEntries(
  manager: EntityManager,
  store: ObjectStore,
  checkpoint: Pick<CheckpointRow, 'checkpointId'>,
): Promise<ManifestEntry[]> {
  return composeManifests(await checkpointDocuments(manager, store, checkpoint));
}
