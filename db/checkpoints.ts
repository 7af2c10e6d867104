import type { EntityManager } from 'typeorm';

/** A checkpoint of a run's files as recorded (see the migration 1763972000000-checkpoints). */
export interface CheckpointRow {
  checkpointId: string;
  runId: string;
  teamId: string;
  turn: number;
  step: number;
  parentId: string | null;
  manifestKey: string;
  fullManifest: boolean;
  /** Manifests to read to compose this one: 1 for a full manifest, its parent's + 1 for a delta. */
  chainLength: number;
  files: number;
  bytes: number;
  bytesAdded: number;
  eventsThrough: string;
  createdAt: Date;
}

interface RawCheckpoint {
  checkpoint_id: string;
  run_id: string;
  team_id: string;
  turn: number;
  step: number;
  parent_id: string | null;
  manifest_key: string;
  full_manifest: boolean;
  chain_length: number;
  files: number;
  bytes: string;
  bytes_added: string;
  events_through: string;
  created_at: Date;
}

const COLUMNS = `checkpoint_id, run_id, team_id, turn, step, parent_id, manifest_key, full_manifest, chain_length,
  files, bytes, bytes_added, events_through, created_at`;

function fromRaw(raw: RawCheckpoint): CheckpointRow {
  return {
    checkpointId: raw.checkpoint_id,
    runId: raw.run_id,
    teamId: raw.team_id,
    turn: raw.turn,
    step: raw.step,
    parentId: raw.parent_id,
    manifestKey: raw.manifest_key,
    fullManifest: raw.full_manifest,
    chainLength: raw.chain_length,
    files: raw.files,
    bytes: Number(raw.bytes),
    bytesAdded: Number(raw.bytes_added),
    eventsThrough: String(raw.events_through),
    createdAt: raw.created_at,
  };
}

export type NewCheckpoint = Omit<CheckpointRow, 'createdAt' | 'eventsThrough' | 'teamId'>;

/**
 * Records a checkpoint and the objects it stored first, the run's transcript up to now being
 * what it follows; nothing when the run already has one for that step (a retried step). Says
 * whether it recorded.
 */
export async function insertCheckpoint(
  tx: EntityManager,
  checkpoint: NewCheckpoint,
  objects: { key: string; size: number }[],
): Promise<boolean> {
  const inserted = (await tx.query(
    `INSERT INTO checkpoints (${COLUMNS})
     SELECT $1, $2, r.team_id, $3, $4, $5, $6, $7, $8, $9, $10, $11,
            COALESCE((SELECT max(id) FROM run_events WHERE run_id = $2), 0), now()
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

/** The run's newest checkpoint, or undefined. */
export async function latestCheckpoint(manager: EntityManager, runId: string): Promise<CheckpointRow | undefined> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM checkpoints WHERE run_id = $1 ORDER BY created_at DESC, checkpoint_id DESC LIMIT 1`,
    [runId],
  )) as RawCheckpoint[];
  return rows[0] && fromRaw(rows[0]);
}

/** A checkpoint of a team's run, or undefined (another team's is none). */
export async function findCheckpoint(
  manager: EntityManager,
  teamId: string,
  runId: string,
  checkpointId: string,
): Promise<CheckpointRow | undefined> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM checkpoints WHERE checkpoint_id = $1 AND run_id = $2 AND team_id = $3`,
    [checkpointId, runId, teamId],
  )) as RawCheckpoint[];
  return rows[0] && fromRaw(rows[0]);
}

/** A checkpoint and the ones before it up to the nearest full manifest, oldest first. */
export async function checkpointChain(manager: EntityManager, checkpointId: string): Promise<CheckpointRow[]> {
  const rows = (await manager.query(
    `WITH RECURSIVE chain AS (
       SELECT ${COLUMNS}, 0 AS depth FROM checkpoints WHERE checkpoint_id = $1
       UNION ALL
       SELECT c.checkpoint_id, c.run_id, c.team_id, c.turn, c.step, c.parent_id, c.manifest_key, c.full_manifest,
              c.chain_length, c.files, c.bytes, c.bytes_added, c.events_through, c.created_at, chain.depth + 1
       FROM checkpoints c JOIN chain ON c.checkpoint_id = chain.parent_id
       WHERE NOT chain.full_manifest
     )
     SELECT ${COLUMNS} FROM chain ORDER BY depth DESC`,
    [checkpointId],
  )) as RawCheckpoint[];
  return rows.map(fromRaw);
}

/** A page of a run's checkpoints, oldest first, after the keyset (created_at, checkpoint_id) of `after`. */
export async function checkpointsPage(
  manager: EntityManager,
  runId: string,
  limit: number,
  after?: { createdAt: string; checkpointId: string },
): Promise<CheckpointRow[]> {
  const rows = (await manager.query(
    `SELECT ${COLUMNS} FROM checkpoints
     WHERE run_id = $1 AND ($2::timestamptz IS NULL OR (created_at, checkpoint_id) > ($2::timestamptz, $3::uuid))
     ORDER BY created_at, checkpoint_id LIMIT $4`,
    [runId, after?.createdAt ?? null, after?.checkpointId ?? null, limit],
  )) as RawCheckpoint[];
  return rows.map(fromRaw);
}

/** The commits a run's repositories started from (`{ "<repo>": "<sha>" }`), as its first provisioning recorded them. */
export async function recordRunBaseCommits(
  manager: EntityManager,
  runId: string,
  commits: Record<string, string>,
): Promise<void> {
  await manager.query(`UPDATE runs SET base_commits = $2 WHERE run_id = $1`, [runId, JSON.stringify(commits)]);
}

export async function runBaseCommits(manager: EntityManager, runId: string): Promise<Record<string, string> | null> {
  const rows = (await manager.query(`SELECT base_commits FROM runs WHERE run_id = $1`, [runId])) as {
    base_commits: Record<string, string> | null;
  }[];
  return rows[0]?.base_commits ?? null;
}
