import type { DataSource } from 'typeorm';
import { loadConfig, type Config } from '../core/config';
import { listApiKeys, type ListedKey } from '../db/api-key-reads';
import { createApiKeyService } from '../services/keys/api-key-service';
import { KeyRequestError } from '../services/keys/key-errors';
import type { RotatedKey } from '../services/keys/key-rotation';
import { parseCommand, type Command } from './keys-command';
import { UsageError } from './usage-error';
import { assertSchemaCurrent } from '../infra/schema-check';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';
import { createAuditLog } from '../services/audit/audit-log';
import { operatorActor } from '../services/audit/operator-actor';
import { createLogger } from '../core/logger';

const iso = (date: Date | null) => (date ? date.toISOString() : 'never');

function keyLine(k: ListedKey): string {
  const state = [
    k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : '',
    k.expired && !k.revokedAt ? '  EXPIRED' : '',
    k.replacedBy ? `  replaced_by=${k.replacedBy}` : '',
  ].join('');
  return (
    `${k.id}  ${k.prefix}  ${k.kind.padEnd(8)}  ${k.role.padEnd(6)}  team=${k.team}  name=${k.name}  creator=${k.principalUid}` +
    `  created=${k.createdAt.toISOString()}  expires_at=${iso(k.expiresAt)}  last_used_at=${iso(k.lastUsedAt)}${state}\n`
  );
}

function rotatedText({ created, old }: RotatedKey): string {
  const until = old.revokedAt
    ? `The old key is revoked.`
    : `The old key keeps working until ${old.expiresAt!.toISOString()}, then is refused.`;
  return (
    `Rotated key ${old.id} (prefix ${old.prefix}) to ${created.role} key ${created.id} (prefix ${created.prefix}), ` +
    `of the same holder, team and kind; the new key expires ${created.expiresAt ? `at ${iso(created.expiresAt)}` : 'never'}.\n` +
    `${until} The new key is shown once; store it now:\n${created.rawKey}\n`
  );
}

async function runCommand(command: Command, config: Config, dataSource: DataSource): Promise<void> {
  // The events are in the database; this terminal sees only an event that could not be stored.
  const log = createAuditLog({ dataSource, logger: createLogger('warn', 'keys', { format: 'pretty' }) });
  const keys = createApiKeyService({ config, dataSource, audit: { log, actor: operatorActor(config.auditOperator) } });
  const out = (text: string) => process.stdout.write(text);
  if (command.name === 'create') {
    const key = await keys.create(command.request);
    const kind = command.request.kind;
    out(
      `Created ${kind} ${key.role} key ${key.id} (prefix ${key.prefix}) for ${command.who}; it expires ${key.expiresAt ? `at ${iso(key.expiresAt)}` : 'never'}.\n` +
        `${kind === 'agent' ? 'Agent' : 'Creator'} uid: ${key.principalUid}. The key is shown once; store it now:\n${key.rawKey}\n`,
    );
  } else if (command.name === 'list') {
    const listed = await listApiKeys(dataSource);
    if (listed.length === 0) out('No keys.\n');
    for (const k of listed) out(keyLine(k));
  } else if (command.name === 'set-role') {
    if ((await keys.setRole(command.key, command.role)) === null) throw new UsageError(`No active key ${command.key}.`);
    out(`Key ${command.key} is now ${command.role}.\n`);
  } else if (command.name === 'rotate') {
    out(rotatedText(await keys.rotate(command.key, command.options)));
  } else {
    if ((await keys.revoke(command.key)) === null)
      throw new UsageError(`No active key with id or prefix ${command.key}.`);
    out(`Revoked ${command.key}.\n`);
  }
}

/** Manages API keys in the configured database; the raw key is the last line of `create` and `rotate`. */
async function main(argv: string[]): Promise<void> {
  const command = parseCommand(argv);
  const config = loadConfig();
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      await assertSchemaCurrent(dataSource, 'The keys command');
      await runCommand(command, config, dataSource).catch((err: unknown) => {
        throw err instanceof KeyRequestError ? new UsageError(err.message) : err;
      });
    } finally {
      await dataSource.destroy();
    }
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
