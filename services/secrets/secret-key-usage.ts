import type { DataSource } from 'typeorm';
import { keyUse } from '../../core/secrets';
import type { SecretsKeyring } from '../../core/secrets-keyring';
import { SECRET_COLUMNS } from '../../db/stored-secrets';
import { DEFAULT_BATCH_SIZE, forEachSecretBatch, mapStoredSecrets } from './stored-secret-values';

/** What an `enc:v1` value that no configured key opens is counted under (it names no key). */
export const V1_WITHOUT_KEY = 'enc:v1';

/** The stored values of one column, or of all, by the key each needs. */
export interface KeyUsage {
  /** By id of the ring's keys, each present (0 when nothing needs it), newest first. */
  byKey: Record<string, number>;
  /** Values stored in plain text before encryption existed. */
  plaintext: number;
  /** By the id of a key the ring lacks (V1_WITHOUT_KEY: enc:v1 values no key opens): values that cannot be read. */
  missing: Record<string, number>;
}

export interface KeyUsageReport {
  total: KeyUsage;
  byColumn: { column: string; usage: KeyUsage }[];
}

const emptyUsage = (ring: SecretsKeyring): KeyUsage => ({
  byKey: Object.fromEntries(ring.keys.map((k) => [k.id, 0])),
  plaintext: 0,
  missing: {},
});

function count(usage: KeyUsage, value: string, ring: SecretsKeyring): void {
  const use = keyUse(value, ring);
  if (use.kind === 'plaintext') usage.plaintext += 1;
  else if (use.kind === 'ring') usage.byKey[use.key.id] = (usage.byKey[use.key.id] ?? 0) + 1;
  else usage.missing[use.keyId ?? V1_WITHOUT_KEY] = (usage.missing[use.keyId ?? V1_WITHOUT_KEY] ?? 0) + 1;
}

function addInto(total: KeyUsage, usage: KeyUsage): void {
  for (const [id, n] of Object.entries(usage.byKey)) total.byKey[id] = (total.byKey[id] ?? 0) + n;
  for (const [id, n] of Object.entries(usage.missing)) total.missing[id] = (total.missing[id] ?? 0) + n;
  total.plaintext += usage.plaintext;
}

/**
 * How many stored values need each key of the ring (an enc:v1 value, the key that opens it), how
 * many are plain text, and how many need a key the ring lacks: a key is removable when no value
 * needs it. Reads only.
 */
export async function secretKeyUsage(dataSource: DataSource, ring: SecretsKeyring): Promise<KeyUsageReport> {
  const report: KeyUsageReport = { total: emptyUsage(ring), byColumn: [] };
  for (const column of SECRET_COLUMNS) {
    const usage = emptyUsage(ring);
    await forEachSecretBatch(dataSource.manager, column, DEFAULT_BATCH_SIZE, (rows) => {
      for (const row of rows) {
        mapStoredSecrets(column, row.value, (value) => {
          count(usage, value, ring);
          return value;
        });
      }
    });
    report.byColumn.push({ column: column.name, usage });
    addInto(report.total, usage);
  }
  return report;
}
