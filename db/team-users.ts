import type { EntityManager } from 'typeorm';

/** A user principal of the team, by uid or by name (this service keeps no e-mail addresses). */
export async function findTeamUser(
  manager: EntityManager,
  teamId: string,
  uidOrName: string,
): Promise<{ uid: string; displayName: string } | null> {
  const rows = (await manager.query(
    `SELECT uid, display_name FROM principals
      WHERE team_id = $1 AND type = 'user' AND (uid = $2 OR display_name = $2)
      ORDER BY (uid = $2) DESC LIMIT 1`,
    [teamId, uidOrName],
  )) as { uid: string; display_name: string }[];
  return rows[0] ? { uid: rows[0].uid, displayName: rows[0].display_name } : null;
}
