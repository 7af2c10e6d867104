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
