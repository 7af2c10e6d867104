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
  // One statement: the checkpoint and what holds its objects against garbage collection are
  // recorded together or not at all, in one round trip.
  const inserted = (await tx.query(
    `WITH checkpoint AS (
       INSERT INTO checkpoints (${CHECKPOINT_COLUMNS}, harness_session_id)
       SELECT $1, $2, r.team_id, $3, $4, $5, $6, $7, $8, $9, $10, $11,
              COALESCE((SELECT max(id) FROM run_events WHERE run_id = $2), 0), now(),
              (SELECT session_id FROM run_harness_state WHERE run_id = $2)
       FROM runs r WHERE r.run_id = $2
       ON CONFLICT (run_id, turn, step) DO NOTHING
       RETURNING checkpoint_id
     ), held AS (
       INSERT INTO checkpoint_objects (checkpoint_id, object_key, size_bytes)
       SELECT c.checkpoint_id, o.key, o.size FROM checkpoint c, unnest($12::text[], $13::bigint[]) AS o(key, size)
       ON CONFLICT DO NOTHING
     )
     SELECT checkpoint_id FROM checkpoint`,
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
      objects.map((o) => o.key),
      objects.map((o) => o.size),
    ],
  )) as unknown[];
  return inserted.length > 0;
}

/** The commits a run's repositories started from (`{ "<repo>": "<sha>" }`), as its first provisioning recorded them. */
export async function recordRunBaseCommits(
  manager: EntityManager,
  runId: string,
  commits: Record<string, string>,
): Promise<void> {
  await manager.query(`UPDATE runs SET base_commits = $2 WHERE run_id = $1`, [runId, JSON.stringify(commits)]);
}
