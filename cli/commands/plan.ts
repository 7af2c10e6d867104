import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { getRun } from '../follow';
import { terminalSafe } from '../terminal-text';
import type { ArtifactItem, PlanResponse, RunItem } from '../wire';

/**
 * The plan the run's latest turn ended with: its newest `PLAN` artifact, when the run SUCCEEDED
 * and its status message names it (a later turn that carried the plan out names none).
 */
export function planOfTurn(run: RunItem): ArtifactItem | undefined {
  const newest = (run.artifacts ?? []).filter((a) => a.artifact_type === 'PLAN').at(-1);
  const uid = newest?.data.artifact_uid;
  return run.state === 'SUCCEEDED' && uid && run.status_message?.message?.includes(uid) ? newest : undefined;
}

/**
 * Prints a plan version's markdown (what `GET /agent/artifacts/{uid}` answers): as the result on
 * stdout, or (`asNote`, after `run --wait`, whose stdout is the run id) on stderr.
 */
export async function printPlan(ctx: CommandContext, item: ArtifactItem, asNote = false): Promise<PlanResponse> {
  const plan = await ctx.client.get<PlanResponse>(`/agent/artifacts/${encodeURIComponent(item.data.artifact_uid)}`);
  if (!ctx.out.json) {
    ctx.out.note(`Plan "${terminalSafe(plan.data.title)}", version ${plan.data.version}:`);
    const markdown = terminalSafe(plan.data.content);
    if (asNote) ctx.out.note(markdown);
    else ctx.out.text(markdown);
  }
  return plan;
}

/** `agent-runs plan <id>`: the markdown of the run's plan (its newest version, or `--plan-version n`). */
export async function planCommand(
  ctx: CommandContext,
  runId: string,
  options: { planVersion?: number },
): Promise<number> {
  const version = options.planVersion;
  const run = await getRun(ctx.client, runId);
  const plans = (run.artifacts ?? []).filter((a) => a.artifact_type === 'PLAN');
  const item = version === undefined ? plans.at(-1) : plans.find((p) => p.data.version === version);
  if (!item) {
    const which = version === undefined ? 'a plan' : `version ${version} of a plan`;
    ctx.out.note(
      `Run ${run.run_id} has no ${which} (versions: ${plans.length || 'none'}; start one with --mode plan).`,
    );
    return EXIT_CODES.error;
  }
  const plan = await printPlan(ctx, item);
  if (ctx.out.json) ctx.out.document(plan);
  return EXIT_CODES.ok;
}
