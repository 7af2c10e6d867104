import type { EntityManager } from 'typeorm';

/**
 * Bytes a team's runs keep in the object store: what each checkpoint stored anew, and each file
 * (artifact, attachment, handoff patch, CLI log). Objects shared with other runs count for the
 * run that stored them first.
 */
export async function teamStoredBytes(manager: EntityManager, teamId: string): Promise<number> {
  return storedBytesWhere(manager, '$1', teamId);
}

/** teamStoredBytes of the team of run `runId`. */
export async function runTeamStoredBytes(manager: EntityManager, runId: string): Promise<number> {
  return storedBytesWhere(manager, '(SELECT team_id FROM runs WHERE run_id = $1)', runId);
}

async function storedBytesWhere(manager: EntityManager, team: string, param: string): Promise<number> {
  const [row] = (await manager.query(
    `SELECT (SELECT COALESCE(sum(bytes_added), 0) FROM checkpoints WHERE team_id = ${team})
          + (SELECT COALESCE(sum(b.size_bytes), 0) FROM blobs b JOIN runs r ON r.run_id = b.run_id WHERE r.team_id = ${team})
            AS bytes`,
    [param],
  )) as { bytes: string }[];
  return Number(row?.bytes ?? 0);
}

/** One team's teamStoredBytes, as largestTeamsStoredBytes reads it. */
export interface TeamStoredBytes {
  teamId: string;
  team: string;
  bytes: number;
}

/**
 * teamStoredBytes of the `limit` teams that store most, most first, and the sum of the others':
 * one pass over every checkpoint and file row (a metric reads it now and then, never per scrape).
 */
export async function largestTeamsStoredBytes(
  manager: EntityManager,
  limit: number,
): Promise<{ largest: TeamStoredBytes[]; othersBytes: number }> {
  const rows = (await manager.query(
    `WITH per_team AS (
       SELECT team_id, sum(bytes) AS bytes FROM (
         SELECT team_id, sum(bytes_added) AS bytes FROM checkpoints GROUP BY team_id
         UNION ALL
         SELECT r.team_id, sum(b.size_bytes) FROM blobs b JOIN runs r ON r.run_id = b.run_id GROUP BY r.team_id
       ) parts GROUP BY team_id
     ), ranked AS (
       SELECT team_id, bytes, row_number() OVER (ORDER BY bytes DESC, team_id) AS rank FROM per_team
     )
     SELECT r.team_id, t.name, r.bytes::float8 AS bytes FROM ranked r JOIN teams t ON t.id = r.team_id
      WHERE r.rank <= $1
     UNION ALL
     SELECT NULL, NULL, coalesce(sum(bytes), 0)::float8 FROM ranked WHERE rank > $1`,
    [limit],
  )) as { team_id: string | null; name: string | null; bytes: number }[];
  const largest = rows
    .filter((r) => r.team_id !== null)
    .map((r) => ({ teamId: r.team_id!, team: r.name!, bytes: r.bytes }))
    .sort((a, b) => b.bytes - a.bytes);
  return { largest, othersBytes: rows.find((r) => r.team_id === null)?.bytes ?? 0 };
}
