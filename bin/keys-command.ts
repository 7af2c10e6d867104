import { parseArgs } from 'node:util';
import { DurationError, parseDuration } from '../core/durations';
import type { ApiKeyRequest } from '../services/keys/api-key-service';
import type { RotationOptions } from '../services/keys/key-rotation';
import { KEY_ROLES, type KeyRole } from '../db/rows/api-key';
import { UsageError } from './usage-error';

/** The command line of `npm run keys` (bin/keys.ts), parsed and checked before anything is opened. */

export const USAGE = `Usage:
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

const COMMANDS = ['create', 'list', 'set-role', 'rotate', 'revoke'] as const;
type CommandName = (typeof COMMANDS)[number];

/** What a command line asks for, every option checked. */
export type Command =
  | { name: 'create'; request: ApiKeyRequest; who: string }
  | { name: 'list' }
  | { name: 'set-role'; key: string; role: KeyRole }
  | { name: 'rotate'; key: string; options: RotationOptions }
  | { name: 'revoke'; key: string };

type Values = Partial<Record<'kind' | 'name' | 'team' | 'agent' | 'role' | 'expires-in' | 'grace', string>>;

const isKeyRole = (value: string): value is KeyRole => (KEY_ROLES as readonly string[]).includes(value);
const usage = (message: string) => new UsageError(`${message}\n${USAGE}`);

/** The command the arguments ask for, every option checked: a UsageError (exit 2) before anything changes. */
export function parseCommand(argv: string[]): Command {
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
