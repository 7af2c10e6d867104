import Table from 'cli-table3';
import { parseArgs } from 'node:util';
import type { ConsistencyReport } from '../services/restore/consistency-check';
import { DIFFERENCE_KINDS, type DifferenceKind } from '../services/restore/run-comparison';

/** The command line of `npm run restore` (bin/restore.ts), parsed before anything is opened, and its output. */

export const USAGE = `Usage:
  npm run restore -- check [--json] [--quiet-seconds N]

After restoring PostgreSQL from a backup, with the service started in restore mode
(RESTORE_MODE=true): lists every run whose state differs between PostgreSQL and Temporal, with
what to do about each (docs/operations.md, Backup and restore). Changes nothing.

  --json             one JSON document instead of the table
  --quiet-seconds N  leave out runs whose row or workflow changed in the last N seconds (default 30):
                     they may be on their way; they are counted, and a second check compares them

Exit code: 0 when they agree, 1 when runs differ, 2 when the check could not be made.`;

/** A command line the restore command refuses (exit 2); its message says what to write. */
export class UsageError extends Error {}

export interface CheckCommand {
  name: 'check';
  json: boolean;
  quietSeconds: number;
}

export function parseCommand(argv: string[]): CheckCommand {
  const [name, ...rest] = argv;
  if (name !== 'check') throw new UsageError(USAGE);
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { json: { type: 'boolean' }, 'quiet-seconds': { type: 'string' } },
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  const quiet = values['quiet-seconds'] ?? '30';
  if (!/^\d{1,6}$/.test(quiet)) throw new UsageError(`--quiet-seconds must be a whole number of seconds.\n${USAGE}`);
  return { name: 'check', json: values.json ?? false, quietSeconds: Number(quiet) };
}

/** The report as one JSON document (snake_case, like the API's). */
export function reportJson(report: ConsistencyReport): string {
  return `${JSON.stringify(
    {
      task_queue: report.taskQueue,
      runs_compared: report.runsCompared,
      workflows_listed: report.workflowsListed,
      not_compared: report.notCompared,
      differences: report.differences.map((d) => ({
        run_id: d.runId,
        kind: d.kind,
        workflow_id: d.workflowId,
        database: d.database,
        temporal: d.temporal,
        means: DIFFERENCE_KINDS[d.kind].means,
        action: DIFFERENCE_KINDS[d.kind].action,
      })),
    },
    null,
    2,
  )}\n`;
}

/** The report as a table of the differences, what each kind means and what to do, and a summary. */
export function reportText(report: ConsistencyReport): string {
  const lines: string[] = [];
  if (report.differences.length) {
    const table = new Table({ head: ['RUN', 'DIFFERENCE', 'POSTGRESQL', 'TEMPORAL'], style: { head: [], border: [] } });
    for (const d of report.differences) table.push([d.runId, d.kind, d.database, d.temporal]);
    lines.push(table.toString(), '');
    const kinds = [...new Set(report.differences.map((d) => d.kind))] as DifferenceKind[];
    for (const kind of kinds) {
      const count = report.differences.filter((d) => d.kind === kind).length;
      lines.push(
        `${kind} (${count}): ${DIFFERENCE_KINDS[kind].means}`,
        `  What to do: ${DIFFERENCE_KINDS[kind].action}`,
      );
    }
    lines.push('');
  }
  lines.push(
    `Compared ${report.runsCompared} runs: PostgreSQL's unfinished runs and the ${report.workflowsListed} run workflows Temporal lists on task queue ${report.taskQueue}. ` +
      (report.differences.length ? `${report.differences.length} differ.` : 'PostgreSQL and Temporal agree.'),
  );
  if (report.notCompared.length) {
    const named = report.notCompared.slice(0, 10).join(', ') + (report.notCompared.length > 10 ? ', ...' : '');
    lines.push(
      `${report.notCompared.length} changed within the quiet window and were not compared (${named}): check again.`,
    );
  }
  return `${lines.join('\n')}\n`;
}
