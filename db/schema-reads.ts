import type { DataSource } from 'typeorm';

/** The migrations applied to the database, oldest first (none before the first migration ran). */
export async function appliedMigrations(dataSource: DataSource): Promise<string[]> {
  const [{ table }] = (await dataSource.query(`SELECT to_regclass('migrations') IS NOT NULL AS "table"`)) as [
    { table: boolean },
  ];
  if (!table) return [];
  return ((await dataSource.query('SELECT name FROM migrations ORDER BY id')) as { name: string }[]).map((r) => r.name);
}
