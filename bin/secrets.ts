import { parseArgs } from 'node:util';
import { loadConfig } from '../core/config';
import type { SecretsKeyring } from '../core/secrets-keyring';
import { assertSchemaCurrent } from '../infra/schema-check';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { secretKeyUsage, type KeyUsage } from '../services/secrets/secret-key-usage';
import { reencryptStoredSecrets, type ColumnReencryption } from '../services/secrets/secret-reencryption';

const USAGE = `Usage:
  npm run secrets -- key-usage
  npm run secrets -- reencrypt [--batch-size N]

key-usage counts the stored secrets (MCP credentials of runs, schedules and agent identities,
webhook signing secrets, managed secrets) by the key each needs; a key no value needs can leave
SECRETS_ENCRYPTION_KEYS. reencrypt rewrites every stored secret not under the newest key of
SECRETS_ENCRYPTION_KEYS under it, N rows at a time (default 500), while the service runs.
Both read the keys as the API does: SECRETS_ENCRYPTION_KEYS, SECRETS_ENCRYPTION_KEY or the key file.`;

/** A command line the command refuses (exit 2). */
class UsageError extends Error {}

type Command = { name: 'key-usage' } | { name: 'reencrypt'; batchSize?: number };

function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { 'batch-size': { type: 'string' } }, allowPositionals: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const [name, ...rest] = parsed.positionals;
  const batch = parsed.values['batch-size'];
  if (rest.length > 0 || (name !== 'key-usage' && name !== 'reencrypt')) throw new UsageError(USAGE);
  if (name === 'key-usage') {
    if (batch !== undefined) throw new UsageError(`key-usage takes no --batch-size.\n${USAGE}`);
    return { name };
  }
  if (batch === undefined) return { name };
  if (!/^\d{1,5}$/.test(batch) || Number(batch) < 1 || Number(batch) > 10_000) {
    throw new UsageError(`--batch-size must be a whole number from 1 to 10000.\n${USAGE}`);
  }
  return { name, batchSize: Number(batch) };
}

/** `id n, id n` of the counts above zero. */
const counts = (byId: Record<string, number>) =>
  Object.entries(byId)
    .filter(([, n]) => n > 0)
    .map(([id, n]) => `${id} ${n}`)
    .join(', ');

function usageText(ring: SecretsKeyring, total: KeyUsage, byColumn: { column: string; usage: KeyUsage }[]): string {
  const width = Math.max(
    10,
    ...ring.keys.map((k) => k.id.length),
    ...Object.keys(total.missing).map((id) => id.length),
  );
  const line = (label: string, n: number, note: string) =>
    `  ${label.padEnd(width)}  ${String(n).padStart(8)}  ${note}\n`;
  const [newest, ...older] = ring.keys;
  return [
    'Stored secrets by the key each needs (newest first):\n',
    line(newest.id, total.byKey[newest.id] ?? 0, 'newest: encrypts'),
    ...older.map((k) => {
      const n = total.byKey[k.id] ?? 0;
      return line(
        k.id,
        n,
        n === 0 ? 'no stored value needs it: it can be removed' : 'run reencrypt before removing it',
      );
    }),
    line('plain text', total.plaintext, 'stored before encryption existed; reencrypt encrypts them'),
    ...Object.entries(total.missing).map(([id, n]) =>
      line(id, n, 'NOT CONFIGURED: these cannot be decrypted until the key is added back'),
    ),
    'By column:\n',
    ...byColumn.map(({ column, usage }) => {
      const parts = [
        counts(usage.byKey),
        usage.plaintext ? `plain text ${usage.plaintext}` : '',
        counts(usage.missing),
      ];
      return `  ${column}: ${parts.filter(Boolean).join(', ') || 'none'}\n`;
    }),
  ].join('');
}

function reencryptionLine(ring: SecretsKeyring, r: ColumnReencryption): string {
  const left = [
    ...Object.entries(r.missing).map(([id, n]) => `${n} under key ${id}, not configured`),
    r.altered ? `${r.altered} altered since stored` : '',
    r.raced ? `${r.raced} rows changed meanwhile at each attempt (run reencrypt again)` : '',
  ].filter(Boolean);
  return (
    `${r.column}: ${r.reencrypted} re-encrypted under ${ring.keys[0].id}, ${r.current} already were` +
    `${left.length ? `; left as they are: ${left.join(', ')}` : ''}\n`
  );
}

/** Reports and rotates the keys of stored secrets in the configured database. */
async function main(argv: string[]): Promise<void> {
  const command = parseCommand(argv);
  const config = loadConfig();
  const ring = resolveSecretsKeyring(config);
  const out = (text: string) => process.stdout.write(text);
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      await assertSchemaCurrent(dataSource, 'The secrets command');
      if (command.name === 'key-usage') {
        const { total, byColumn } = await secretKeyUsage(dataSource, ring);
        out(usageText(ring, total, byColumn));
        return;
      }
      const results = await reencryptStoredSecrets(dataSource, ring, {
        batchSize: command.batchSize,
        onColumn: (r) => out(reencryptionLine(ring, r)),
      });
      out(`Done: ${results.reduce((n, r) => n + r.reencrypted, 0)} values re-encrypted under ${ring.keys[0].id}.\n`);
    } finally {
      await dataSource.destroy();
    }
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
