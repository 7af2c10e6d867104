import Table from 'cli-table3';
import type { Query } from '../api-client';
import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { getRun } from '../follow';
import { oneLine } from '../terminal-text';
import type { ListRunsResponse, PendingApproval, RunItem } from '../wire';
import { shortTime } from './list';

/** What waits, in one line: the question, or the tool and its command line (or arguments). */
function waitingFor(approval: PendingApproval): string {
  if (approval.kind === 'question') return `question: ${oneLine(approval.question ?? '', 80)}`;
  const command = approval.arguments?.command;
  const what = typeof command === 'string' ? command : JSON.stringify(approval.arguments ?? {});
  return `${approval.tool ?? '?'}: ${oneLine(what, 80)}`;
}

/** `agent-runs approvals`: the team's BLOCKED runs and what each waits for, every page. */
export async function approvalsCommand(ctx: CommandContext): Promise<number> {
  const runs: RunItem[] = [];
  const query: Query = { state: ['BLOCKED'], limit: 100 };
  for (;;) {
    const page = await ctx.client.get<ListRunsResponse>('/agent/runs', query);
    runs.push(...page.runs);
    if (!page.page_info.has_next_page || !page.page_info.next_cursor) break;
    query.cursor = page.page_info.next_cursor;
  }
  const { out } = ctx;
  const waiting = runs.filter((r) => r.pending_approval);
  if (out.json) {
    out.document({ approvals: waiting.map((r) => ({ run_id: r.run_id, title: r.title, ...r.pending_approval })) });
    return EXIT_CODES.ok;
  }
  if (!waiting.length) {
    out.note('No run waits for a decision.');
    return EXIT_CODES.ok;
  }
  const table = new Table({
    head: ['RUN', 'TITLE', 'WAITS FOR', 'EXPIRES'],
    style: { head: out.color ? ['bold'] : [], border: out.color ? ['grey'] : [] },
  });
  for (const run of waiting) {
    const approval = run.pending_approval!;
    table.push([run.run_id, oneLine(run.title, 40), waitingFor(approval), shortTime(approval.expires_at)]);
  }
  out.text(table.toString());
  out.note('Decide with: agent-runs approve RUN [--comment TEXT], agent-runs deny RUN [--comment TEXT]');
  return EXIT_CODES.ok;
}

/** `agent-runs approve|deny <run>`: decides the call the blocked run waits for. */
export async function decideCommand(
  ctx: CommandContext,
  decision: 'approve' | 'deny',
  runId: string,
  options: { comment?: string },
): Promise<number> {
  const run = await getRun(ctx.client, runId);
  const approval = run.pending_approval;
  if (!approval) {
    process.stderr.write(`Error: run ${runId} waits for no decision (it is ${run.state}).\n`);
    return EXIT_CODES.error;
  }
  const decided = await ctx.client.request<RunItem>(
    'POST',
    `/agent/runs/${encodeURIComponent(runId)}/approvals/${encodeURIComponent(approval.approval_id)}`,
    { body: { decision, ...(options.comment !== undefined ? { comment: options.comment } : {}) } },
  );
  if (ctx.out.json) ctx.out.document(decided);
  ctx.out.text(runId);
  ctx.out.note(`${decision === 'approve' ? 'Approved' : 'Denied'} ${waitingFor(approval)} of run ${runId}.`);
  return EXIT_CODES.ok;
}
