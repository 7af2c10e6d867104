import type { EntityManager } from 'typeorm';

/** A team's id from its id or its name; null when neither names a team. */
export async function findTeamId(manager: EntityManager, idOrName: string): Promise<string | null> {
  const [team] = (await manager.query(`SELECT id FROM teams WHERE id::text = $1 OR name = $1 LIMIT 1`, [idOrName])) as {
    id: string;
  }[];
  return team?.id ?? null;
}

/** Team names by id, for reports that list teams. */
export async function teamNames(manager: EntityManager): Promise<Map<string, string>> {
  const rows = (await manager.query(`SELECT id, name FROM teams`)) as { id: string; name: string }[];
  return new Map(rows.map((r) => [r.id, r.name]));
}
