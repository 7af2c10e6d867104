import type { DataSource } from 'typeorm';
import { MIGRATIONS } from '../db/data-source';
import { appliedMigrations } from '../db/schema-reads';

/** This build's migrations the database lacks, and the database's migrations this build does not know. */
export interface SchemaStatus {
  pending: string[];
  /** Applied by a newer build: fine during a rolling upgrade or after a rollback (docs/operations.md, "Rollouts"). */
  newer: string[];
}

export async function schemaStatus(dataSource: DataSource): Promise<SchemaStatus> {
  const applied = await appliedMigrations(dataSource);
  const known = MIGRATIONS.map((Migration) => new Migration().name ?? Migration.name);
  return {
    pending: known.filter((name) => !applied.includes(name)),
    newer: applied.filter((name) => !known.includes(name)),
  };
}

/** A process that needs the schema of this build, started before the schema was migrated to it. */
export class SchemaBehindError extends Error {
  constructor(who: string, pending: string[]) {
    super(
      `${who} needs ${pending.length} migration${pending.length === 1 ? '' : 's'} the database lacks (${pending.join(', ')}): run \`npm run migrate\` (\`node dist/bin/migrate.js\`) first, then start it again.`,
    );
    this.name = 'SchemaBehindError';
  }
}

/**
 * Throws SchemaBehindError unless every migration of this build is applied; returns those a newer
 * build applied (this build works with them: migrations are additive, see "Rollouts").
 */
export async function assertSchemaCurrent(dataSource: DataSource, who: string): Promise<string[]> {
  const status = await schemaStatus(dataSource);
  if (status.pending.length) throw new SchemaBehindError(who, status.pending);
  return status.newer;
}
