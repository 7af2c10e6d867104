import type { DataSource, EntityManager } from 'typeorm';
import { keyUse, reencryptSecret, SecretDecryptionError } from '../../core/secrets';
import type { SecretsKeyring } from '../../core/secrets-keyring';
import {
  readSecretRowsById,
  rewriteSecretRows,
  SECRET_COLUMNS,
  type SecretColumn,
  type StoredSecretRow,
} from '../../db/stored-secrets';
import { V1_WITHOUT_KEY } from './secret-key-usage';
import { DEFAULT_BATCH_SIZE, forEachSecretBatch, mapStoredSecrets } from './stored-secret-values';

/** How often a row the service rewrote meanwhile is read again before it is left for the next run. */
const ATTEMPTS = 3;

/** What re-encrypting one column did. */
export interface ColumnReencryption {
  column: string;
  /** Values now under the newest key that were not: under an older key, enc:v1, or plain text. */
  reencrypted: number;
  /** Values that already were under the newest key. */
  current: number;
  /** Values left as they are because their key is not in the ring (by its id; `enc:v1` when they name none). */
  missing: Record<string, number>;
  /** Values left as they are because they were altered since they were stored (they decrypt for nobody). */
  altered: number;
  /** Rows the service changed again at each attempt: left for another run. */
  raced: number;
}

/** A row's value under the newest key, and what that took. */
interface RowPlan {
  id: string;
  from: unknown;
  to: unknown;
  tally: Omit<ColumnReencryption, 'column' | 'raced'>;
}

const emptyTally = (): RowPlan['tally'] => ({ reencrypted: 0, current: 0, missing: {}, altered: 0 });

function planRow(column: SecretColumn, row: StoredSecretRow, ring: SecretsKeyring): RowPlan {
  const tally = emptyTally();
  const to = mapStoredSecrets(column, row.value, (value) => {
    try {
      const sealed = reencryptSecret(value, ring);
      tally[sealed === value ? 'current' : 'reencrypted'] += 1;
      return sealed;
    } catch (err) {
      if (!(err instanceof SecretDecryptionError)) throw err;
      if (err.failure === 'altered') tally.altered += 1;
      else {
        const use = keyUse(value, ring);
        const id = (use.kind === 'missing' && use.keyId) || V1_WITHOUT_KEY;
        tally.missing[id] = (tally.missing[id] ?? 0) + 1;
      }
      return value;
    }
  });
  return { id: row.id, from: row.value, to, tally };
}

function addTally(into: ColumnReencryption, tally: RowPlan['tally']): void {
  into.reencrypted += tally.reencrypted;
  into.current += tally.current;
  into.altered += tally.altered;
  for (const [id, n] of Object.entries(tally.missing)) into.missing[id] = (into.missing[id] ?? 0) + n;
}

/**
 * Rewrites the batch's rows whose values are not all under the newest key, compare-and-set: a
 * row the service wrote meanwhile is read again and planned afresh, up to ATTEMPTS times.
 */
async function reencryptBatch(
  manager: EntityManager,
  column: SecretColumn,
  rows: StoredSecretRow[],
  ring: SecretsKeyring,
  result: ColumnReencryption,
): Promise<void> {
  let pending = rows;
  for (let attempt = 1; pending.length > 0; attempt += 1) {
    const plans = pending.map((row) => planRow(column, row, ring));
    const changed = plans.filter((p) => p.tally.reencrypted > 0);
    const written = new Set(await rewriteSecretRows(manager, column, changed));
    const lost = changed.filter((p) => !written.has(p.id));
    for (const plan of plans) if (!lost.includes(plan)) addTally(result, plan.tally);
    if (lost.length === 0) return;
    if (attempt === ATTEMPTS) {
      result.raced += lost.length;
      return;
    }
    pending = await readSecretRowsById(
      manager,
      column,
      lost.map((p) => p.id),
    );
  }
}

/**
 * Re-encrypts every stored secret not under the ring's newest key (older keys, enc:v1, plain
 * text) under it, column by column, `batchSize` rows at a time, each batch one short statement
 * that keeps whatever the service wrote meanwhile; safe while the service runs. `onColumn` is
 * told each column's result as it is done. Values whose key the ring lacks are left, and counted.
 */
export async function reencryptStoredSecrets(
  dataSource: DataSource,
  ring: SecretsKeyring,
  options: { batchSize?: number; onColumn?: (result: ColumnReencryption) => void } = {},
): Promise<ColumnReencryption[]> {
  const results: ColumnReencryption[] = [];
  for (const column of SECRET_COLUMNS) {
    const result: ColumnReencryption = { column: column.name, ...emptyTally(), raced: 0 };
    await forEachSecretBatch(dataSource.manager, column, options.batchSize ?? DEFAULT_BATCH_SIZE, (rows) =>
      reencryptBatch(dataSource.manager, column, rows, ring, result),
    );
    options.onColumn?.(result);
    results.push(result);
  }
  return results;
}
