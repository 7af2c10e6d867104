import { parseArgs } from 'node:util';
import { UsageError } from './usage-error';

/** The command line of `npm run teams` (bin/teams.ts), parsed and checked before anything is opened. */

export const USAGE = `Usage:
  npm run teams -- delete <team id or name> [--yes] [--cancel-live]

Deletes a team with everything it has: its runs (with their transcripts, files and workflow
histories), environments, managed secrets, schedules (and their Temporal Schedules), agent
identities, webhooks and their deliveries, factories and their tasks, API keys and users. Without
--yes it prints what it would delete and changes nothing. A team with live runs is refused, naming
them, unless --cancel-live: then they are cancelled and waited for (5 minutes at most). Cut off,
the same command goes on where it stopped.`;

export interface TeamsCommand {
  name: 'delete';
  team: string;
  yes: boolean;
  cancelLive: boolean;
}

const usage = (message: string) => new UsageError(`${message}\n${USAGE}`);

/** The command the arguments ask for: a UsageError (exit 2) before anything is opened. */
export function parseTeamsCommand(argv: string[]): TeamsCommand {
  const [name, ...rest] = argv;
  if (name !== 'delete') throw new UsageError(USAGE);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { yes: { type: 'boolean' }, 'cancel-live': { type: 'boolean' } },
      allowPositionals: true,
    });
  } catch (err) {
    throw usage((err as Error).message);
  }
  const [team, ...extra] = parsed.positionals;
  if (!team?.trim()) throw usage('delete takes the team: its id or its name.');
  if (extra.length) throw usage(`delete takes one team; got also ${extra.join(' ')}.`);
  return {
    name: 'delete',
    team: team.trim(),
    yes: parsed.values.yes === true,
    cancelLive: parsed.values['cancel-live'] === true,
  };
}
