import { parseArgs } from 'node:util';
import { loadConfig } from '../core/config';
import { createApiKey, listApiKeys, revokeApiKey, UnknownAgentError } from '../db/api-keys';
import { runMigrations } from '../db/data-source';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';

const USAGE = `Usage:
  npm run keys -- create --kind personal|agent --name NAME --team TEAM
  npm run keys -- create --kind agent --agent AGENT_UID
  npm run keys -- list
  npm run keys -- revoke <key id or prefix>`;

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
      },
      allowPositionals: true,
    });
  } catch (err) {
    // An unknown option or one without its value is a usage error too (exit 2, with the usage).
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (command !== 'create' && command !== 'list' && command !== 'revoke') throw new UsageError(USAGE);
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
      await runMigrations(dataSource);
      if (command === 'create') {
        const key = await createApiKey(
          dataSource,
          values.agent !== undefined
            ? { kind: 'agent', agentUid: values.agent.trim() }
            : { kind: values.kind as 'personal' | 'agent', name: values.name!.trim(), team: values.team!.trim() },
        ).catch((err: unknown) => {
          throw err instanceof UnknownAgentError ? new UsageError(err.message) : err;
        });
        const who = values.agent !== undefined ? `agent ${values.agent}` : `"${values.name}" in team "${values.team}"`;
        process.stdout.write(
          `Created ${values.kind} key ${key.id} (prefix ${key.prefix}) for ${who}.\n` +
            `${values.kind === 'agent' ? 'Agent' : 'Creator'} uid: ${key.principalUid}. The key is shown once; store it now:\n${key.rawKey}\n`,
        );
      } else if (command === 'list') {
        const keys = await listApiKeys(dataSource);
        if (keys.length === 0) process.stdout.write('No keys.\n');
        for (const k of keys) {
          process.stdout.write(
            `${k.id}  ${k.prefix}  ${k.kind.padEnd(8)}  team=${k.team}  name=${k.name}  creator=${k.principalUid}  created=${k.createdAt.toISOString()}${k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : ''}\n`,
          );
        }
      } else {
        const revoked = await revokeApiKey(dataSource, positionals[0]!);
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
