import type { EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import { insertCheckpoint } from './checkpoints';
import { inheritHarnessSession } from './harness-state';

/**
 * Makes a new run a fork: it names its source and checkpoint, its repositories started where
 * the source's did, its CLI (`cliHarness`, when the source's) continues the source's session as
 * of the checkpoint, and its first checkpoint (turn 0, step 0) is the source's files then, from
 * which its first workspace is made. In the run's creation transaction, after its conversation.
 */
export async function recordFork(
  tx: EntityManager,
  fork: {
    runId: string;
    sourceRunId: string;
    checkpointId: string;
    /** The fork's CLI harness, when it is also the source's: a CLI resumes only its own kind of session. */
    cliHarness?: string;
    manifest: { manifestKey: string; files: number; bytes: number; objects: { key: string; size: number }[] };
  },
): Promise<void> {
  await tx.query(
    `UPDATE runs SET forked_from_run_id = $2, forked_from_checkpoint_id = $3,
       base_commits = (SELECT base_commits FROM runs WHERE run_id = $2)
     WHERE run_id = $1`,
    [fork.runId, fork.sourceRunId, fork.checkpointId],
  );
  // Before its first checkpoint, which then names the same session: a fork of the fork resumes it too.
  if (fork.cliHarness) {
    await inheritHarnessSession(tx, { runId: fork.runId, harness: fork.cliHarness, checkpointId: fork.checkpointId });
  }
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
