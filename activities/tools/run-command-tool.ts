import { exceeded as diskExceeded, RunDiskLimitError } from '../sandbox/run-disk';
import { networkRefusalNotes } from '../sandbox/network-notes';
import { limitHint } from '../sandbox/sandbox';
import { capText } from './output-capture';
import { numberArg, stringArg, ToolInputError, workspaceRelative } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

export async function runCommand(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const command = stringArg(args, 'command');
  const cwdArg = stringArg(args, 'cwd', false);
  const cwd = cwdArg ? workspaceRelative(ctx, cwdArg) : '';
  // The workspace's root is a directory by construction: asking the sandbox costs a process start.
  if (cwd === undefined || (cwd !== '' && !(await ctx.files.isDirectory(cwd))))
    throw new ToolInputError(`cwd ${cwdArg} is not a directory of the workspace`);
  const requested = numberArg(args, 'timeout_seconds');
  const timeoutSeconds = Math.max(1, Math.min(requested ?? ctx.commandTimeoutSeconds, ctx.commandTimeoutSeconds));
  const result = await ctx.processes.runCommand({
    command,
    cwd,
    policy: ctx.networkPolicy,
    timeoutMs: timeoutSeconds * 1000,
    signal: ctx.signal,
    keepBytes: Math.max(ctx.outputLimitBytes, 1024 * 1024),
    disk: ctx.disk,
  });
  if (result.diskLimitExceeded !== undefined) {
    throw withOutput(diskExceeded(result.diskLimitExceeded, ctx.disk!.maxBytes), result.output, ctx);
  }
  if (result.cancelled) throw new Error('command cancelled');
  await ctx.disk?.check().catch((err: unknown) => {
    throw err instanceof RunDiskLimitError ? withOutput(err, result.output, ctx) : err;
  });
  const status = result.timedOut
    ? `Timed out after ${timeoutSeconds}s; the command and its children were killed.`
    : `Exit code ${result.exitCode ?? `signal ${result.signal}`} in ${result.durationMs} ms.`;
  const failed = result.timedOut || result.exitCode !== 0;
  const hint = result.oomKilled
    ? `The kernel killed a process of this command: the run's processes together reached their memory limit of ${ctx.memoryLimitMb ?? '?'} MiB (AGENT_SANDBOX_MEMORY_MB).`
    : failed
      ? limitHint(result.exitCode, result.output)
      : undefined;
  const notes = networkRefusalNotes(result.refusals) + (hint ? `\n[sandbox] ${hint}` : '');
  return {
    output: `${status}\n${capText(result.output, ctx.outputLimitBytes)}${notes}`,
    isError: failed,
    details: {
      exit_code: result.exitCode,
      duration_ms: result.durationMs,
      timed_out: result.timedOut,
      full_output: result.output + notes,
      ...(result.refusals.length ? { network_refusals: result.refusals } : {}),
    },
  };
}

/** The limit's error, carrying what the command printed (its `No space left on device`, say). */
function withOutput(err: RunDiskLimitError, output: string, ctx: ToolContext): RunDiskLimitError {
  err.toolOutput = capText(output, ctx.outputLimitBytes);
  return err;
}
