import { readStdin, type CommandContext } from '../context';
import { EXIT_CODES, UsageError } from '../exit-codes';
import type { CreateRunResponse } from '../wire';
import { followAndReport, waitAndReport } from './watch-run';

export interface RunOptions {
  env?: string;
  skill?: string;
  model?: string;
  name?: string;
  title?: string;
  metadata?: Record<string, string>;
  idleTimeout?: number;
  mode?: string;
  /** `--plan`: the same as `--mode plan`. */
  plan?: boolean;
  /** `--pr`: deliver each turn's change as a pull request (`config.delivery.pull_request: {}`). */
  pr?: boolean;
  wait?: boolean;
  follow?: boolean;
  idempotencyKey?: string;
}

/** The body of `POST /agent/runs` for the command's prompt and options. */
export function createRunBody(prompt: string | undefined, options: RunOptions): Record<string, unknown> {
  if (options.plan && options.mode !== undefined && options.mode !== 'plan') {
    throw new UsageError(`--plan asks for --mode plan, not --mode ${options.mode}: give one of them.`);
  }
  const mode = options.plan ? 'plan' : options.mode;
  const config: Record<string, unknown> = {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.model !== undefined ? { model_id: options.model } : {}),
    ...(options.env !== undefined ? { environment_id: options.env } : {}),
    ...(options.idleTimeout !== undefined ? { idle_timeout_minutes: options.idleTimeout } : {}),
    ...(options.pr ? { delivery: { pull_request: {} } } : {}),
  };
  return {
    ...(prompt !== undefined ? { prompt } : {}),
    ...(options.title !== undefined ? { title: options.title } : {}),
    ...(options.skill !== undefined ? { skill: options.skill } : {}),
    ...(options.metadata ? { metadata: options.metadata } : {}),
    ...(mode !== undefined ? { mode } : {}),
    ...(Object.keys(config).length ? { config } : {}),
  };
}

/** `agent-runs run "<prompt>"`: creates a run; with `--wait` or `--follow`, stays until it ends. */
export async function runCommand(ctx: CommandContext, promptArg: string | undefined, options: RunOptions) {
  const prompt = promptArg === '-' ? await readStdin() : promptArg;
  if ((prompt === undefined || prompt.trim() === '') && options.skill === undefined) {
    throw new UsageError(
      'Give the run a prompt (`agent-runs run "<prompt>"`, or `-` to read it from stdin), or a --skill.',
    );
  }
  const created = await ctx.client.create<CreateRunResponse>(
    '/agent/runs',
    createRunBody(prompt, options),
    options.idempotencyKey,
  );
  const { out } = ctx;
  if (!options.wait && !options.follow) {
    if (out.json) out.document(created);
    out.text(created.run_id);
    out.note(`Run ${created.run_id} is ${created.state}. Follow it with: agent-runs logs ${created.run_id} --follow`);
    return EXIT_CODES.ok;
  }
  out.text(created.run_id);
  return options.follow ? followAndReport(ctx, created.run_id) : waitAndReport(ctx, created.run_id);
}
