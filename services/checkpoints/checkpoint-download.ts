import type { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { EntityManager } from 'typeorm';
import type { CheckpointRow } from '../../db/checkpoint-reads';
import type { ObjectStore } from '../../infra/object-store/object-store';
import { checkpointEntries } from './checkpoint-entries';
import { checkpointTar } from './checkpoint-tar';

/** What a checkpoint's download holds: the run's workspace (its home, with the CLIs' state, stays out). */
const DOWNLOADED_ROOT = 'workspace';

/**
 * The workspace at `checkpoint` as a `.tar.gz` stream (entries under `workspace/`, symlinks as
 * links, modes and times kept), read from the object store as it is sent.
 */
export async function checkpointArchive(
  manager: EntityManager,
  store: ObjectStore,
  checkpoint: CheckpointRow,
): Promise<Readable> {
  const entries = (await checkpointEntries(manager, store, checkpoint)).filter(
    (e) => e.path === DOWNLOADED_ROOT || e.path.startsWith(`${DOWNLOADED_ROOT}/`),
  );
  const gzip = createGzip();
  const tar = checkpointTar(store, entries);
  tar.on('error', (err) => gzip.destroy(err));
  return tar.pipe(gzip);
}
