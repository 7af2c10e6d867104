import { operatorActor } from '../services/audit/operator-actor';
import { createAuditLog } from '../services/audit/audit-log';
import type { DataSource } from 'typeorm';
import { loadConfig, type Config } from '../core/config';
import { createLogger, loggerOptions } from '../core/logger';
import { connectTemporalClient, openDataSource } from '../infra/connections';
import { resolveEndpoints, temporalTarget, withDatabase } from '../infra/runtime';
import { assertSchemaCurrent } from '../infra/schema-check';
import {
  createTeamDeletion,
  LiveRunsError,
  planTeamDeletion,
  type TeamDeletionPlan,
} from '../services/teams/team-deletion';
import { parseTeamsCommand, type TeamsCommand } from './teams-command';
import { UsageError } from './usage-error';

const out = (text: string) => process.stdout.write(text);

function planText({ team, rows, live, storedBytes }: TeamDeletionPlan): string {
  const width = Math.max(...Object.keys(rows).map((t) => t.length));
  const lines = Object.entries(rows).map(([table, n]) => `  ${table.padEnd(width)}  ${n}\n`);
  return (
    `Team "${team.name}" (${team.id}): rows by table\n${lines.join('')}` +
    `Runs' files: ${storedBytes} bytes in the object store, removed by the object collector once no row names them.\n` +
    (live.total
      ? `Live runs: ${live.total} (${live.runs.map((r) => r.runId).join(', ')}${live.total > live.runs.length ? ', ...' : ''}): --yes refuses unless --cancel-live.\n`
      : '')
  );
}

async function deleteTeam(command: TeamsCommand, plan: TeamDeletionPlan, config: Config, dataSource: DataSource) {
  const logger = createLogger(config.logLevel, 'teams', loggerOptions(config));
  const { connection, client } = await connectTemporalClient(temporalTarget(config, resolveEndpoints(config)));
  try {
    // The events are in the database; this terminal sees only an event that could not be stored.
    const auditLog = createAuditLog({ dataSource, logger: createLogger('warn', 'teams', { format: 'pretty' }) });
    const audit = { log: auditLog, actor: operatorActor(config.auditOperator) };
    const deletion = createTeamDeletion({ config, dataSource, temporal: client, logger, audit });
    const done = await deletion.deleteTeam(plan.team, {
      cancelLive: command.cancelLive,
      say: (line) => out(`${line}\n`),
    });
    const rows = Object.entries(done.rows)
      .filter(([, n]) => n > 0)
      .map(([table, n]) => `${table} ${n}`);
    out(
      `Deleted team "${plan.team.name}" (${plan.team.id}): ${done.runs} runs with everything they left; ${rows.join(', ')}.\n`,
    );
  } finally {
    await connection.close();
  }
}

/** Deletes a team in the configured database and Temporal (docs/operations.md, "Data lifecycle"). */
async function main(argv: string[]): Promise<void> {
  const command = parseTeamsCommand(argv);
  const config = loadConfig();
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      await assertSchemaCurrent(dataSource, 'The teams command');
      const plan = await planTeamDeletion(dataSource, command.team);
      if (!plan) {
        out(`No team ${command.team}: nothing to delete.\n`);
        return;
      }
      out(planText(plan));
      if (!command.yes) out('Nothing was changed: run it again with --yes to delete all of this.\n');
      else await deleteTeam(command, plan, config, dataSource);
    } finally {
      await dataSource.destroy();
    }
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  const rerun =
    err instanceof UsageError || err instanceof LiveRunsError
      ? ''
      : '\nRunning the same command again goes on where this one stopped.';
  process.stderr.write(`${message}${rerun}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
