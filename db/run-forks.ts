import type { EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import { insertCheckpoint } from './checkpoints';

/**
 * Makes a new run a fork: it names its source and checkpoint, its repositories started where
 * the source's did, and its first checkpoint (turn 0, step 0) is the source's files then, from
 * which its first workspace is made. In the run's creation transaction.
 */
export async function recordFork(
  tx: EntityManager,
  fork: {
    runId: string;
    sourceRunId: string;
    checkpointId: string;
    manifest: { manifestKey: string; files: number; bytes: number; objects: { key: string; size: number }[] };
  },
): Promise<void> {
  await tx.query(
    `UPDATE runs SET forked_from_run_id = $2, forked_from_checkpoint_id = $3,
       base_commits = (SELECT base_commits FROM runs WHERE run_id = $2)
     WHERE run_id = $1`,
    [fork.runId, fork.sourceRunId, fork.checkpointId],
  );
  const { manifestKey, files, bytes, objects } = fork.manifest;
  await insertCheckpoint(
    tx,
    {
      checkpointId: newUuidV7(),
      runId: fork.runId,
      turn: 0,
      step: 0,
      parentId: null,
      manifestKey,
      fullManifest: true,
      chainLength: 1,
      files,
      bytes,
      bytesAdded: 0,
    },
    objects,
  );
}
