import type { EntityManager } from 'typeorm';

/**
 * A column that holds values of core/secrets.ts (`enc:…`): one secret in a text column, or MCP
 * servers (whose `env` and `headers` values are secrets) in a jsonb column or below `path` in one.
 */
export interface SecretColumn {
  /** How reports name it: `runs.config.mcp_servers`. */
  name: string;
  table: string;
  /** The primary key, a single column. */
  id: string;
  idType: 'uuid' | 'bigint' | 'text';
  column: string;
  path: readonly string[];
  holds: 'secret' | 'mcp_servers';
}

/**
 * Every place a stored secret is. A webhook event keeps a copy of its run's row, the MCP
 * credentials with it (as encrypted then), to show the run as it was at that change.
 */
export const SECRET_COLUMNS: readonly SecretColumn[] = [
  col('managed_secrets', 'id', 'uuid', 'encrypted_value', [], 'secret'),
  col('webhooks', 'id', 'uuid', 'secret', [], 'secret'),
  col('runs', 'run_id', 'uuid', 'config', ['mcp_servers'], 'mcp_servers'),
  col('schedules', 'schedule_id', 'uuid', 'agent_config', ['mcp_servers'], 'mcp_servers'),
  col('agent_identities', 'uid', 'text', 'mcp_servers', [], 'mcp_servers'),
  col('webhook_events', 'id', 'bigint', 'run', ['config', 'mcp_servers'], 'mcp_servers'),
];

function col(
  table: string,
  id: string,
  idType: SecretColumn['idType'],
  column: string,
  path: string[],
  holds: SecretColumn['holds'],
): SecretColumn {
  return { name: [table, column, ...path].join('.'), table, id, idType, column, path, holds };
}

/** One row's stored value: a string (`secret`) or MCP servers (`mcp_servers`); never null. */
export interface StoredSecretRow {
  id: string;
  value: unknown;
}

/** The value's SQL: the column, or the jsonb below its path. */
const valueOf = (c: SecretColumn) => (c.path.length ? `t.${c.column} #> '{${c.path.join(',')}}'` : `t.${c.column}`);
const sqlType = (c: SecretColumn) => (c.holds === 'secret' ? 'text' : 'jsonb');

/** Up to `limit` rows of `c` with a value, after the row `after` (by primary key), in key order. */
export async function readSecretRows(
  manager: EntityManager,
  c: SecretColumn,
  after: string | null,
  limit: number,
): Promise<StoredSecretRow[]> {
  return (await manager.query(
    `SELECT t.${c.id}::text AS id, ${valueOf(c)} AS value FROM ${c.table} t
      WHERE ${valueOf(c)} IS NOT NULL AND ($1::${c.idType} IS NULL OR t.${c.id} > $1::${c.idType})
      ORDER BY t.${c.id} LIMIT $2`,
    [after, limit],
  )) as StoredSecretRow[];
}

/** The rows of `c` with these ids, as they are now. */
export async function readSecretRowsById(
  manager: EntityManager,
  c: SecretColumn,
  ids: string[],
): Promise<StoredSecretRow[]> {
  return (await manager.query(
    `SELECT t.${c.id}::text AS id, ${valueOf(c)} AS value FROM ${c.table} t
      WHERE t.${c.id} = ANY($1::${c.idType}[]) AND ${valueOf(c)} IS NOT NULL`,
    [ids],
  )) as StoredSecretRow[];
}

/** A row's value as read (`from`) and as it is to be (`to`). */
export interface SecretRewrite {
  id: string;
  from: unknown;
  to: unknown;
}

/**
 * Writes each rewrite whose row still holds its `from` value (compare-and-set, one statement:
 * a write the service made meanwhile is kept); returns the ids written. Nothing else of the row
 * changes: a jsonb path is set in place.
 */
export async function rewriteSecretRows(
  manager: EntityManager,
  c: SecretColumn,
  rewrites: SecretRewrite[],
): Promise<string[]> {
  if (rewrites.length === 0) return [];
  const type = sqlType(c);
  const text = (v: unknown) => (c.holds === 'secret' ? (v as string) : JSON.stringify(v));
  const set = c.path.length
    ? `jsonb_set(t.${c.column}, '{${c.path.join(',')}}', w.to_value::jsonb)`
    : `w.to_value::${type}`;
  // TypeORM answers an UPDATE with its rows and their count.
  const [rows] = (await manager.query(
    `UPDATE ${c.table} t SET ${c.column} = ${set}
       FROM unnest($1::${c.idType}[], $2::text[], $3::text[]) AS w(id, from_value, to_value)
      WHERE t.${c.id} = w.id AND ${valueOf(c)} = w.from_value::${type}
      RETURNING t.${c.id}::text AS id`,
    [rewrites.map((r) => r.id), rewrites.map((r) => text(r.from)), rewrites.map((r) => text(r.to))],
  )) as [{ id: string }[], number];
  return rows.map((r) => r.id);
}
