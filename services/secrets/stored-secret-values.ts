import type { EntityManager } from 'typeorm';
import type { McpServerConfig } from '../../core/run-types';
import { mapSecretValues } from '../../core/secrets';
import { readSecretRows, type SecretColumn, type StoredSecretRow } from '../../db/stored-secrets';

/** How many rows a batch reads (and rewrites at once): short statements while the service runs. */
export const DEFAULT_BATCH_SIZE = 500;

/**
 * A stored value with each secret in it passed through `fn`: the value itself in a `secret`
 * column, each MCP `env` and `headers` value in an `mcp_servers` one. Anything else (a JSON null
 * where servers would be) is kept as it is.
 */
export function mapStoredSecrets(column: SecretColumn, value: unknown, fn: (secret: string) => string): unknown {
  if (column.holds === 'secret') return typeof value === 'string' ? fn(value) : value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return mapSecretValues(value as Record<string, McpServerConfig>, fn);
}

/** Calls `fn` with the rows of `column` that hold a value, `batchSize` at a time, in key order. */
export async function forEachSecretBatch(
  manager: EntityManager,
  column: SecretColumn,
  batchSize: number,
  fn: (rows: StoredSecretRow[]) => Promise<void> | void,
): Promise<void> {
  let after: string | null = null;
  for (;;) {
    const rows = await readSecretRows(manager, column, after, batchSize);
    if (rows.length > 0) await fn(rows);
    if (rows.length < batchSize) return;
    after = rows[rows.length - 1]!.id;
  }
}
