import { readStdin, type CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import type { CreateRunResponse } from '../wire';
import { download } from './artifacts';
import { followAndReport, waitAndReport } from './watch-run';

interface CheckpointSummary {
  checkpoint_id: string;
  turn: number;
  step: number;
  created_at: string;
  files: number;
  bytes: number;
  bytes_added: number;
}

interface CheckpointList {
  checkpoints: CheckpointSummary[];
  page_info: { has_next_page: boolean; next_cursor?: string };
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** Every checkpoint of the run, oldest first, page after page. */
async function allCheckpoints(ctx: CommandContext, runId: string): Promise<CheckpointSummary[]> {
  const all: CheckpointSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.client.get<CheckpointList>(
      `/agent/runs/${encodeURIComponent(runId)}/checkpoints`,
      cursor ? { cursor } : {},
    );
    all.push(...page.checkpoints);
    cursor = page.page_info.has_next_page ? page.page_info.next_cursor : undefined;
  } while (cursor);
  return all;
}

/**
 * `agent-runs checkpoints <run_id>`: the run's checkpoints, oldest first; `--download <id>`
 * saves that checkpoint's workspace as a `.tar.gz` (`--output`, default `checkpoint-<id>.tar.gz`).
 */
export async function checkpointsCommand(
  ctx: CommandContext,
  runId: string,
  options: { download?: string; output?: string },
): Promise<number> {
  const { out } = ctx;
  if (options.download !== undefined) {
    const item = await ctx.client.get<CheckpointSummary & { download_url: string }>(
      `/agent/runs/${encodeURIComponent(runId)}/checkpoints/${encodeURIComponent(options.download)}`,
    );
    const target = options.output ?? `checkpoint-${item.checkpoint_id}.tar.gz`;
    const bytes = await download(item.download_url, target);
    if (out.json) out.document({ ...item, saved_to: target });
    out.note(`Saved ${target} (${mib(bytes)}): the workspace after step ${item.step} of turn ${item.turn}.`);
    return EXIT_CODES.ok;
  }
  const checkpoints = await allCheckpoints(ctx, runId);
  if (out.json) {
    out.document({ run_id: runId, checkpoints });
    return EXIT_CODES.ok;
  }
  if (checkpoints.length === 0) out.note(`Run ${runId} has no checkpoint yet.`);
  for (const c of checkpoints) {
    out.text(
      `${c.checkpoint_id}  turn ${c.turn} step ${c.step}  ${c.files} files, ${mib(c.bytes)} (+${mib(c.bytes_added)})  ${c.created_at}`,
    );
  }
  return EXIT_CODES.ok;
}

export interface ForkOptions {
  checkpoint?: string;
  title?: string;
  wait?: boolean;
  follow?: boolean;
  idempotencyKey?: string;
}

/** `agent-runs fork <run_id> [prompt]`: a new run from the run's checkpoint (the latest by default). */
export async function forkCommand(
  ctx: CommandContext,
  runId: string,
  promptArg: string | undefined,
  options: ForkOptions,
): Promise<number> {
  const prompt = promptArg === '-' ? await readStdin() : promptArg;
  const forked = await ctx.client.create<
    CreateRunResponse & { forked_from: { run_id: string; checkpoint_id: string } }
  >(
    `/agent/runs/${encodeURIComponent(runId)}/fork`,
    {
      ...(options.checkpoint !== undefined ? { checkpoint_id: options.checkpoint } : {}),
      ...(prompt !== undefined && prompt.trim() !== '' ? { prompt } : {}),
      ...(options.title !== undefined ? { title: options.title } : {}),
    },
    options.idempotencyKey,
  );
  const { out } = ctx;
  if (!options.wait && !options.follow) {
    if (out.json) out.document(forked);
    out.text(forked.run_id);
    out.note(
      `Run ${forked.run_id} forks ${forked.forked_from.run_id} at checkpoint ${forked.forked_from.checkpoint_id}; it is ${forked.state}.`,
    );
    return EXIT_CODES.ok;
  }
  out.text(forked.run_id);
  return options.follow ? followAndReport(ctx, forked.run_id) : waitAndReport(ctx, forked.run_id);
}
