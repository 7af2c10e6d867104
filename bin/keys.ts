import { parseArgs } from 'node:util';
import { loadConfig } from '../core/config';
import { listApiKeys } from '../db/api-key-reads';
import { createApiKeyService, UnknownAgentError } from '../services/keys/api-key-service';
import { KEY_ROLES, type KeyRole } from '../db/rows/api-key';

const isKeyRole = (value: string): value is KeyRole => (KEY_ROLES as readonly string[]).includes(value);
import { assertSchemaCurrent } from '../infra/schema-check';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';

const USAGE = `Usage:
  npm run keys -- create --kind personal|agent --name NAME --team TEAM [--role member|admin]
  npm run keys -- create --kind agent --agent AGENT_UID [--role member|admin]
  npm run keys -- list
  npm run keys -- set-role <key id or prefix> member|admin
  npm run keys -- revoke <key id or prefix>

A member key runs agents and manages environments, schedules, factories and identities; an
admin key also changes identities' permissions (on_behalf_of_enabled), deletes identities
(revoking their keys) and manages webhooks. Keys are members unless --role admin.`;

class UsageError extends Error {}

/** Manages API keys in the configured database; the raw key is the last line of `create`. */
async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: {
        kind: { type: 'string' },
        name: { type: 'string' },
        team: { type: 'string' },
        agent: { type: 'string' },
        role: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (err) {
    // An unknown option or one without its value is a usage error too (exit 2, with the usage).
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (!['create', 'list', 'revoke', 'set-role'].includes(command ?? '')) throw new UsageError(USAGE);
  if (values.role !== undefined && !isKeyRole(values.role))
    throw new UsageError(`--role must be member or admin.\n${USAGE}`);
  if (command === 'set-role' && (positionals.length !== 2 || !isKeyRole(positionals[1]!))) throw new UsageError(USAGE);
  if (command === 'create') {
    if (values.kind !== 'personal' && values.kind !== 'agent')
      throw new UsageError(`--kind must be personal or agent.\n${USAGE}`);
    if (values.agent !== undefined) {
      if (values.kind !== 'agent') throw new UsageError(`--agent goes with --kind agent.\n${USAGE}`);
      if (values.name !== undefined || values.team !== undefined) {
        throw new UsageError(`--agent names the identity and its team; omit --name and --team.\n${USAGE}`);
      }
    } else {
      if (!values.name?.trim()) throw new UsageError(`--name is required.\n${USAGE}`);
      if (!values.team?.trim()) throw new UsageError(`--team is required.\n${USAGE}`);
    }
  }
  if (command === 'revoke' && positionals.length !== 1) throw new UsageError(USAGE);

  const config = loadConfig();
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      await assertSchemaCurrent(dataSource, 'The keys command');
      const keys = createApiKeyService({ config, dataSource });
      if (command === 'create') {
        const key = await keys
          .create({
            ...(values.agent !== undefined
              ? { kind: 'agent' as const, agentUid: values.agent.trim() }
              : { kind: values.kind as 'personal' | 'agent', name: values.name!.trim(), team: values.team!.trim() }),
            role: values.role as KeyRole | undefined,
          })
          .catch((err: unknown) => {
            throw err instanceof UnknownAgentError ? new UsageError(err.message) : err;
          });
        const who = values.agent !== undefined ? `agent ${values.agent}` : `"${values.name}" in team "${values.team}"`;
        process.stdout.write(
          `Created ${values.kind} ${key.role} key ${key.id} (prefix ${key.prefix}) for ${who}.\n` +
            `${values.kind === 'agent' ? 'Agent' : 'Creator'} uid: ${key.principalUid}. The key is shown once; store it now:\n${key.rawKey}\n`,
        );
      } else if (command === 'list') {
        const listed = await listApiKeys(dataSource);
        if (listed.length === 0) process.stdout.write('No keys.\n');
        for (const k of listed) {
          process.stdout.write(
            `${k.id}  ${k.prefix}  ${k.kind.padEnd(8)}  ${k.role.padEnd(6)}  team=${k.team}  name=${k.name}  creator=${k.principalUid}  created=${k.createdAt.toISOString()}${k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : ''}\n`,
          );
        }
      } else if (command === 'set-role') {
        if (!(await keys.setRole(positionals[0]!, positionals[1] as KeyRole))) {
          throw new UsageError(`No active key ${positionals[0]}.`);
        }
        process.stdout.write(`Key ${positionals[0]} is now ${positionals[1]}.\n`);
      } else {
        const revoked = await keys.revoke(positionals[0]!);
        if (!revoked) throw new UsageError(`No active key with id or prefix ${positionals[0]}.`);
        process.stdout.write(`Revoked ${positionals[0]}.\n`);
      }
    } finally {
      await dataSource.destroy();
    }
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
