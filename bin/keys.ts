import { parseArgs } from 'node:util';
import type { DataSource } from 'typeorm';
import { loadConfig, type Config } from '../core/config';
import { DurationError, parseDuration } from '../core/durations';
import { listApiKeys, type ListedKey } from '../db/api-key-reads';
import { createApiKeyService, type ApiKeyRequest } from '../services/keys/api-key-service';
import { KeyRequestError } from '../services/keys/key-errors';
import type { RotatedKey, RotationOptions } from '../services/keys/key-rotation';
import { KEY_ROLES, type KeyRole } from '../db/rows/api-key';
import { assertSchemaCurrent } from '../infra/schema-check';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';

const USAGE = `Usage:
  npm run keys -- create --kind personal|agent --name NAME --team TEAM [--role member|admin] [--expires-in DURATION]
  npm run keys -- create --kind agent --agent AGENT_UID [--role member|admin] [--expires-in DURATION]
  npm run keys -- list
  npm run keys -- set-role <key id or prefix> member|admin
  npm run keys -- rotate <key id or prefix> [--grace DURATION] [--expires-in DURATION]
  npm run keys -- revoke <key id or prefix>

A member key runs agents and manages environments, schedules, factories and identities; an
admin key also changes identities' permissions (on_behalf_of_enabled), deletes identities
(revoking their keys) and manages webhooks. Keys are members unless --role admin.

A DURATION is a whole number and a unit, s, m, h or d: 90d, 12h, 30m, 2s. A key made with
--expires-in is refused from then on. rotate prints a new key of the same holder, team, kind and
role; the old key keeps working for --grace (default 24h; 0 revokes it at once), and the new one
lasts as long as the old was made to (or --expires-in).`;

class UsageError extends Error {}

const COMMANDS = ['create', 'list', 'set-role', 'rotate', 'revoke'] as const;
type CommandName = (typeof COMMANDS)[number];

type Command =
  | { name: 'create'; request: ApiKeyRequest; who: string }
  | { name: 'list' }
  | { name: 'set-role'; key: string; role: KeyRole }
  | { name: 'rotate'; key: string; options: RotationOptions }
  | { name: 'revoke'; key: string };

type Values = Partial<Record<'kind' | 'name' | 'team' | 'agent' | 'role' | 'expires-in' | 'grace', string>>;

const isKeyRole = (value: string): value is KeyRole => (KEY_ROLES as readonly string[]).includes(value);
const usage = (message: string) => new UsageError(`${message}\n${USAGE}`);

/** The command the arguments ask for, every option checked: a UsageError (exit 2) before anything changes. */
function parseCommand(argv: string[]): Command {
  const [name, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(
        ['kind', 'name', 'team', 'agent', 'role', 'expires-in', 'grace'].map((o) => [o, { type: 'string' as const }]),
      ),
      allowPositionals: true,
    });
  } catch (err) {
    // An unknown option or one without its value is a usage error too (exit 2, with the usage).
    throw usage((err as Error).message);
  }
  if (!(COMMANDS as readonly string[]).includes(name ?? '')) throw new UsageError(USAGE);
  const values = parsed.values as Values;
  const positionals = parsed.positionals;
  refuseForeignOptions(name as CommandName, values);
  if (values.role !== undefined && !isKeyRole(values.role)) throw usage('--role must be member or admin.');
  switch (name as CommandName) {
    case 'create':
      return parseCreate(values);
    case 'list':
      return { name: 'list' };
    case 'set-role':
      if (positionals.length !== 2 || !isKeyRole(positionals[1]!)) throw new UsageError(USAGE);
      return { name: 'set-role', key: positionals[0]!, role: positionals[1] };
    case 'rotate':
      if (positionals.length !== 1) throw usage('rotate takes one key id or prefix.');
      return { name: 'rotate', key: positionals[0]!, options: parseRotation(values) };
    case 'revoke':
      if (positionals.length !== 1) throw new UsageError(USAGE);
      return { name: 'revoke', key: positionals[0]! };
  }
}

/** Options another command takes are refused, not ignored: `list --grace 1h` asks for something that does not happen. */
function refuseForeignOptions(name: CommandName, values: Values): void {
  const allowed: Record<CommandName, (keyof Values)[]> = {
    create: ['kind', 'name', 'team', 'agent', 'role', 'expires-in'],
    list: [],
    'set-role': [],
    rotate: ['grace', 'expires-in'],
    revoke: [],
  };
  const foreign = (Object.keys(values) as (keyof Values)[]).filter((o) => !allowed[name].includes(o));
  if (foreign.length > 0) throw usage(`${name} takes no --${foreign[0]}.`);
}

function parseCreate(values: Values): Command {
  if (values.kind !== 'personal' && values.kind !== 'agent') throw usage('--kind must be personal or agent.');
  const expiry = values['expires-in'] === undefined ? {} : { expiresInSeconds: lifetime(values['expires-in']) };
  const role = values.role as KeyRole | undefined;
  if (values.agent !== undefined) {
    if (values.kind !== 'agent') throw usage('--agent goes with --kind agent.');
    if (values.name !== undefined || values.team !== undefined) {
      throw usage('--agent names the identity and its team; omit --name and --team.');
    }
    const agentUid = values.agent.trim();
    return { name: 'create', request: { kind: 'agent', agentUid, role, ...expiry }, who: `agent ${agentUid}` };
  }
  const name = values.name?.trim();
  const team = values.team?.trim();
  if (!name) throw usage('--name is required.');
  if (!team) throw usage('--team is required.');
  return {
    name: 'create',
    request: { kind: values.kind, name, team, role, ...expiry },
    who: `"${name}" in team "${team}"`,
  };
}

function parseRotation(values: Values): RotationOptions {
  return {
    ...(values.grace === undefined ? {} : { graceSeconds: duration(values.grace, '--grace') }),
    ...(values['expires-in'] === undefined ? {} : { expiresInSeconds: lifetime(values['expires-in']) }),
  };
}

function duration(text: string, option: string): number {
  try {
    return parseDuration(text, option);
  } catch (err) {
    throw err instanceof DurationError ? usage(err.message) : err;
  }
}

/** An --expires-in: a duration of more than nothing. */
function lifetime(text: string): number {
  const seconds = duration(text, '--expires-in');
  if (seconds === 0) throw usage('--expires-in must be longer than 0: a key that expires at once is no key.');
  return seconds;
}

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
  const keys = createApiKeyService({ config, dataSource });
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
    if (!(await keys.setRole(command.key, command.role))) throw new UsageError(`No active key ${command.key}.`);
    out(`Key ${command.key} is now ${command.role}.\n`);
  } else if (command.name === 'rotate') {
    out(rotatedText(await keys.rotate(command.key, command.options)));
  } else {
    if (!(await keys.revoke(command.key))) throw new UsageError(`No active key with id or prefix ${command.key}.`);
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
