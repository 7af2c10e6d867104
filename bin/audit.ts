import { parseArgs } from 'node:util';
import type { DataSource } from 'typeorm';
import { loadConfig } from '../core/config';
import { findTeamId, teamNames } from '../db/team-reads';
import { openDataSource } from '../infra/connections';
import { withDatabase } from '../infra/runtime';
import { assertSchemaCurrent } from '../infra/schema-check';
import { verifyAuditChains, type TeamChainReport } from '../services/audit/audit-verify';

const USAGE = `Usage:
  npm run audit -- verify [--team TEAM]

Checks each team's audit chain (or TEAM's, by id or name): every event's hash covers its content
and the event before it, none is missing, and the newest is the chain's head. Exit 0 when every
chain is intact, 1 when one is not (the problems are listed), 2 on a usage error.`;

class UsageError extends Error {}

function parse(argv: string[]): { team?: string } {
  const [command, ...rest] = argv;
  if (command !== 'verify') throw new UsageError(command ? `Unknown command ${command}.\n${USAGE}` : USAGE);
  try {
    const { values } = parseArgs({ args: rest, options: { team: { type: 'string' } } });
    return { team: values.team };
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
}

function reportLines(report: TeamChainReport, name: string | undefined): string {
  const team = name ? `${name} (${report.teamId})` : report.teamId;
  if (report.problemCount === 0) return `team ${team}: ${report.events} events, chain intact\n`;
  const lines = report.problems.map((p) => `  seq ${p.seq}${p.eventId ? ` (event ${p.eventId})` : ''}: ${p.problem}\n`);
  const more = report.problemCount - report.problems.length;
  return `team ${team}: ${report.events} events, ${report.problemCount} problems\n${lines.join('')}${more > 0 ? `  … and ${more} more\n` : ''}`;
}

async function verify(dataSource: DataSource, team: string | undefined): Promise<boolean> {
  const teamId = team === undefined ? undefined : await findTeamId(dataSource.manager, team);
  if (teamId === null) throw new UsageError(`No team ${team}.`);
  const reports = await verifyAuditChains(dataSource, teamId);
  const names = await teamNames(dataSource.manager);
  if (reports.length === 0) process.stdout.write('No audit events yet.\n');
  for (const report of reports) process.stdout.write(reportLines(report, names.get(report.teamId)));
  return reports.every((r) => r.problemCount === 0);
}

/** `npm run audit -- verify`: checks the audit log's hash chains in the configured database. */
async function main(argv: string[]): Promise<void> {
  const { team } = parse(argv);
  const config = loadConfig();
  await withDatabase(config, async (url) => {
    const dataSource = await openDataSource(url, { poolSize: 2 });
    try {
      await assertSchemaCurrent(dataSource, 'The audit command');
      if (!(await verify(dataSource, team))) process.exitCode = 1;
    } finally {
      await dataSource.destroy();
    }
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
