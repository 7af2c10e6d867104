import { loadConfig } from '../core/config';
import { runMigrations } from '../db/data-source';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';

/** Applies pending migrations to DATABASE_URL (or the embedded database). */
async function main(): Promise<void> {
  const config = loadConfig();
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      const applied = await runMigrations(dataSource);
      process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database schema is up to date.\n');
    } finally {
      await dataSource.destroy();
    }
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`Migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
