import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';

/** `agent-runs cancel <id>`: asks the run to stop; it is CANCELLED within seconds. */
export async function cancelCommand(ctx: CommandContext, runId: string): Promise<number> {
  await ctx.client.request<string>('POST', `/agent/runs/${encodeURIComponent(runId)}/cancel`, { body: {} });
  if (ctx.out.json) ctx.out.document({ run_id: runId, cancel_requested: true });
  ctx.out.text(runId);
  ctx.out.note(`Cancellation of run ${runId} requested; it ends CANCELLED within seconds.`);
  return EXIT_CODES.ok;
}
