import type { CommandContext } from '../context';
import { exitCodeOfState, isStopState, isTerminalState, EXIT_CODES } from '../exit-codes';
import { followRun, getRun, waitForRun } from '../follow';
import { renderEvent } from '../render-event';
import { headingText, oneLine } from '../terminal-text';
import type { RunEvent, RunItem } from '../wire';
import { planOfTurn, printPlan } from './plan';

/** The line that says how a run ended, with its status message (for SUCCEEDED, the agent's answer). */
export function endLine(ctx: CommandContext, run: RunItem, withAnswer: boolean): string {
  const s = ctx.out.style;
  const status = run.status_message;
  const colour =
    run.state === 'SUCCEEDED' ? 'green' : run.state === 'CANCELLED' || run.state === 'BLOCKED' ? 'yellow' : 'red';
  let line = `Run ${run.run_id} ${s(colour, s('bold', run.state))}`;
  if (status?.message && (run.state !== 'SUCCEEDED' || withAnswer)) {
    line += `: ${status.error_code ? `[${status.error_code}] ` : ''}${headingText(status.message)}`;
  }
  return line;
}

function exitCode(run: RunItem): number {
  if (run.state === 'BLOCKED') return exitCodeOfState('BLOCKED');
  return isTerminalState(run.state) ? exitCodeOfState(run.state) : EXIT_CODES.error;
}

/** `--wait`: polls until the run ends; notes each state; exits by how it ended. */
export async function waitAndReport(ctx: CommandContext, runId: string): Promise<number> {
  let linked = false;
  const run = await waitForRun(ctx.client, runId, (seen) => {
    if (!isStopState(seen.state)) ctx.out.note(`Run ${runId} is ${seen.state}`);
    if (seen.session_link && !linked) {
      linked = true;
      ctx.out.note(`Transcript: ${seen.session_link}`);
    }
  });
  if (ctx.out.json) ctx.out.document(run);
  ctx.out.note(endLine(ctx, run, true));
  printPullRequests(ctx, run);
  const plan = planOfTurn(run);
  if (plan && !ctx.out.json) await printPlan(ctx, plan, true);
  return exitCode(run);
}

/**
 * The run's pull requests (`PULL_REQUEST` artifacts, `config.delivery.pull_request`), their URLs
 * on stdout one a line after the run's id: what a CI job reads.
 */
function printPullRequests(ctx: CommandContext, run: RunItem): void {
  if (ctx.out.json) return;
  for (const artifact of run.artifacts ?? []) {
    if (artifact.artifact_type !== 'PULL_REQUEST' || !artifact.data.url) continue;
    ctx.out.text(artifact.data.url);
    ctx.out.note(
      `Pull request (${artifact.data.status ?? 'unknown'}) on ${artifact.data.branch ?? '?'}: ${artifact.data.url}`,
    );
  }
}

/** What the spinner says after `event`, or null to take it away; undefined leaves it as it is. */
function activity(event: RunEvent): string | null | undefined {
  const p = event.payload;
  switch (event.kind) {
    case 'state':
      if (isStopState(p.state)) return null;
      return p.state === 'QUEUED' ? 'Queued…' : 'Agent is thinking…';
    case 'assistant':
      return Array.isArray(p.tool_calls) && p.tool_calls.length > 0 ? 'Running tools…' : undefined;
    case 'tool_call_started':
      return p.name === 'run_command'
        ? `Running ${oneLine(String((p.input as { command?: unknown } | undefined)?.command ?? ''), 60)}`
        : `Running ${oneLine(String(p.name), 40)}…`;
    case 'tool_call':
    case 'files_changed':
    case 'followup':
    case 'context_summary':
      return 'Agent is thinking…';
    case 'command':
      return 'Setting up the workspace…';
    default:
      return undefined;
  }
}

/**
 * `--follow`: prints the run's events live (one JSON event per line with `--json`) and exits,
 * like `--wait`, as soon as the run is in a terminal state.
 */
export async function followAndReport(ctx: CommandContext, runId: string, afterId?: string): Promise<number> {
  const { out } = ctx;
  let linked = false;
  let run: RunItem;
  try {
    run = await followRun(ctx.client, runId, {
      afterId,
      onReconnect: ({ afterId: after, reason }) =>
        out.note(`Event stream interrupted (${reason}); resuming after event ${after ?? 0}.`),
      onEvent(event) {
        if (out.json) out.jsonLine(event);
        else out.text(renderEvent(event, out.style));
        const next = activity(event);
        if (next === null) out.idle();
        else if (next !== undefined) out.working(next);
        if (event.kind === 'state' && event.payload.state === 'INPROGRESS' && !linked) {
          linked = true;
          void getRun(ctx.client, runId)
            .then((r) => r.session_link && out.note(`Transcript: ${r.session_link}`))
            .catch(() => undefined);
        }
      },
    });
  } finally {
    // The spinner hides the cursor: give it back whatever happened.
    out.idle();
  }
  out.note(endLine(ctx, run, false));
  return exitCode(run);
}
