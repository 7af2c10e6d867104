import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { getRun } from '../follow';
import { oneLine, terminalSafe } from '../terminal-text';
import type { RunItem } from '../wire';

/** A run as `name  value` lines for people. */
export function describeRun(run: RunItem): string {
  const status = run.status_message;
  const rows: [string, string | undefined][] = [
    ['Run', run.run_id],
    ['Title', oneLine(run.title, 200)],
    ['State', run.state],
    [
      run.state === 'SUCCEEDED' ? 'Answer' : 'Status',
      status?.message !== undefined
        ? `${status.error_code ? `[${status.error_code}] ` : ''}${terminalSafe(status.message)}`
        : undefined,
    ],
    ['Created', run.created_at],
    ['Updated', run.updated_at],
    ['Started', run.started_at],
    ['Run time', run.run_time],
    ['Agent', run.agent_config?.name],
    ['Model', run.agent_config?.model_id],
    ['Environment', run.agent_config?.environment_id],
    ['Skill', run.agent_config?.skill_spec],
    ['Source', run.source],
    ['Creator', run.creator?.display_name && `${run.creator.display_name} (${run.creator.type ?? '?'})`],
    ['Tokens', run.request_usage?.total_tokens?.toString()],
    ['Cost (USD)', run.request_usage?.inference_cost_usd?.toString()],
    [
      'Metadata',
      run.metadata && Object.keys(run.metadata).length
        ? Object.entries(run.metadata)
            .map(([k, v]) => `${k}=${oneLine(v, 100)}`)
            .join(', ')
        : undefined,
    ],
    ['Artifacts', run.artifacts?.length ? String(run.artifacts.length) : undefined],
    ['Parent run', run.parent_run_id],
    ['Transcript', run.session_link],
  ];
  return rows
    .filter((row): row is [string, string] => row[1] !== undefined && row[1] !== '')
    .map(([name, value]) => `${name.padEnd(12)}${value.replace(/\n/g, `\n${' '.repeat(12)}`)}`)
    .join('\n');
}

/** `agent-runs get <id>`: the run. */
export async function getCommand(ctx: CommandContext, runId: string): Promise<number> {
  const run = await getRun(ctx.client, runId);
  if (ctx.out.json) ctx.out.document(run);
  else ctx.out.text(describeRun(run));
  return EXIT_CODES.ok;
}
