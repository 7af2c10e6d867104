import type { EntityManager } from 'typeorm';
import { CHECKPOINT_COLUMNS, type CheckpointRow } from './checkpoint-reads';

export type NewCheckpoint = Omit<CheckpointRow, 'createdAt' | 'eventsThrough' | 'teamId'>;

/**
 * Records a checkpoint and the objects it stored first, the run's transcript up to now being
 * what it follows and its CLI's session now the one its home holds (a fork resumes it);
 * nothing when the run already has one for that step (a retried step). Says whether it recorded.
 */
export async function insertCheckpoint(
  tx: EntityManager,
  checkpoint: NewCheckpoint,
  objects: { key: string; size: number }[],
): Promise<boolean> {
  const inserted = (await tx.query(
    `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}, harness_session_id)
     SELECT $1, $2, r.team_id, $3, $4, $5, $6, $7, $8, $9, $10, $11,
            COALESCE((SELECT max(id) FROM run_events WHERE run_id = $2), 0), now(),
            (SELECT session_id FROM run_harness_state WHERE run_id = $2)
     FROM runs r WHERE r.run_id = $2
     ON CONFLICT (run_id, turn, step) DO NOTHING
     RETURNING checkpoint_id`,
    [
      checkpoint.checkpointId,
      checkpoint.runId,
      checkpoint.turn,
      checkpoint.step,
      checkpoint.parentId,
      checkpoint.manifestKey,
      checkpoint.fullManifest,
      checkpoint.chainLength,
      checkpoint.files,
      checkpoint.bytes,
      checkpoint.bytesAdded,
    ],
  )) as unknown[];
  if (inserted.length === 0) return false;
  if (objects.length) {
    await tx.query(
      `INSERT INTO checkpoint_objects (checkpoint_id, object_key, size_bytes)
       SELECT $1, key, size FROM unnest($2::text[], $3::bigint[]) AS o(key, size)
       ON CONFLICT DO NOTHING`,
      [checkpoint.checkpointId, objects.map((o) => o.key), objects.map((o) => o.size)],
    );
  }
  return true;
}

/** The commits a run's repositories started from (`{ "<repo>": "<sha>" }`), as its first provisioning recorded them. */
export async function recordRunBaseCommits(
  manager: EntityManager,
  runId: string,
  commits: Record<string, string>,
): Promise<void> {
  await manager.query(`UPDATE runs SET base_commits = $2 WHERE run_id = $1`, [runId, JSON.stringify(commits)]);
}
