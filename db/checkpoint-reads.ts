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

export interface RawCheckpoint {
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

export const CHECKPOINT_COLUMNS = `checkpoint_id, run_id, team_id, turn, step, parent_id, manifest_key, full_manifest, chain_length,
  files, bytes, bytes_added, events_through, created_at`;

export function checkpointFromRaw(raw: RawCheckpoint): CheckpointRow {
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

/** The run's newest checkpoint, or undefined. */
export async function latestCheckpoint(manager: EntityManager, runId: string): Promise<CheckpointRow | undefined> {
  const rows = (await manager.query(
    `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = $1 ORDER BY created_at DESC, checkpoint_id DESC LIMIT 1`,
    [runId],
  )) as RawCheckpoint[];
  return rows[0] && checkpointFromRaw(rows[0]);
}

/** A checkpoint of a team's run, or undefined (another team's is none). */
export async function findCheckpoint(
  manager: EntityManager,
  teamId: string,
  runId: string,
  checkpointId: string,
): Promise<CheckpointRow | undefined> {
  const rows = (await manager.query(
    `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE checkpoint_id = $1 AND run_id = $2 AND team_id = $3`,
    [checkpointId, runId, teamId],
  )) as RawCheckpoint[];
  return rows[0] && checkpointFromRaw(rows[0]);
}

/** A checkpoint and the ones before it up to the nearest full manifest, oldest first. */
export async function checkpointChain(manager: EntityManager, checkpointId: string): Promise<CheckpointRow[]> {
  const rows = (await manager.query(
    `WITH RECURSIVE chain AS (
       SELECT ${CHECKPOINT_COLUMNS}, 0 AS depth FROM checkpoints WHERE checkpoint_id = $1
       UNION ALL
       SELECT c.checkpoint_id, c.run_id, c.team_id, c.turn, c.step, c.parent_id, c.manifest_key, c.full_manifest,
              c.chain_length, c.files, c.bytes, c.bytes_added, c.events_through, c.created_at, chain.depth + 1
       FROM checkpoints c JOIN chain ON c.checkpoint_id = chain.parent_id
       WHERE NOT chain.full_manifest
     )
     SELECT ${CHECKPOINT_COLUMNS} FROM chain ORDER BY depth DESC`,
    [checkpointId],
  )) as RawCheckpoint[];
  return rows.map(checkpointFromRaw);
}

/** A page of a run's checkpoints, oldest first, after the keyset (created_at, checkpoint_id) of `after`. */
export async function checkpointsPage(
  manager: EntityManager,
  runId: string,
  limit: number,
  after?: { createdAt: string; checkpointId: string },
): Promise<CheckpointRow[]> {
  const rows = (await manager.query(
    `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints
     WHERE run_id = $1 AND ($2::timestamptz IS NULL OR (created_at, checkpoint_id) > ($2::timestamptz, $3::uuid))
     ORDER BY created_at, checkpoint_id LIMIT $4`,
    [runId, after?.createdAt ?? null, after?.checkpointId ?? null, limit],
  )) as RawCheckpoint[];
  return rows.map(checkpointFromRaw);
}

/** The commits a run's repositories started from, as its first provisioning recorded them; null before. */
export async function runBaseCommits(manager: EntityManager, runId: string): Promise<Record<string, string> | null> {
  const rows = (await manager.query(`SELECT base_commits FROM runs WHERE run_id = $1`, [runId])) as {
    base_commits: Record<string, string> | null;
  }[];
  return rows[0]?.base_commits ?? null;
}

/** The stored size of each of `keys`, as the checkpoints that hold them recorded it. */
export async function checkpointObjectSizes(
  manager: EntityManager,
  keys: string[],
): Promise<{ key: string; size: number }[]> {
  if (keys.length === 0) return [];
  const rows = (await manager.query(
    `SELECT object_key, max(size_bytes) AS size FROM checkpoint_objects WHERE object_key = ANY($1::text[]) GROUP BY object_key`,
    [keys],
  )) as { object_key: string; size: string }[];
  return rows.map((r) => ({ key: r.object_key, size: Number(r.size) }));
}

/** A checkpoint by its id alone, for its signed download (the signature is the capability). */
export async function findCheckpointUnscoped(
  manager: EntityManager,
  checkpointId: string,
): Promise<CheckpointRow | undefined> {
  const rows = (await manager.query(`SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE checkpoint_id = $1`, [
    checkpointId,
  ])) as RawCheckpoint[];
  return rows[0] && checkpointFromRaw(rows[0]);
}
