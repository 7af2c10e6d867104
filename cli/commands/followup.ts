import { readStdin, type CommandContext } from '../context';
import { EXIT_CODES, UsageError } from '../exit-codes';
import { lastEventId } from '../follow';
import type { CreateRunResponse } from '../wire';
import { followAndReport, waitAndReport } from './watch-run';

export interface FollowupOptions {
  mode?: string;
  wait?: boolean;
  follow?: boolean;
  idempotencyKey?: string;
}

/** `agent-runs followup <id> "<message>"`: steers the run; with `--wait`/`--follow`, stays until it ends again. */
export async function followupCommand(
  ctx: CommandContext,
  runId: string,
  messageArg: string,
  options: FollowupOptions,
): Promise<number> {
  const message = messageArg === '-' ? await readStdin() : messageArg;
  if (!message.trim()) throw new UsageError('Give the follow-up a message (or `-` to read it from stdin).');
  // Only what the follow-up brings is shown: the events after those recorded before it is sent.
  const after = options.follow ? await lastEventId(ctx.client, runId) : undefined;
  const sent = await ctx.client.create<CreateRunResponse>(
    `/agent/runs/${encodeURIComponent(runId)}/followups`,
    { message, ...(options.mode !== undefined ? { mode: options.mode } : {}) },
    options.idempotencyKey,
  );
  if (options.follow) return followAndReport(ctx, runId, after ?? '0');
  if (options.wait) return waitAndReport(ctx, runId);
  if (ctx.out.json) ctx.out.document(sent);
  ctx.out.note(`Follow-up recorded; run ${sent.run_id} is ${sent.state}.`);
  return EXIT_CODES.ok;
}
