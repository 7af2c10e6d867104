import { randomUUID } from 'node:crypto';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import { decryptMcpServers } from '../../core/secrets';
import type { NetworkPolicy } from '../../core/network-policy';
import type { StepRun } from '../../db/run-step-reads';
import type { ActivityDeps } from '../deps';
import type { RunDiskQuota } from '../sandbox/run-disk';
import type { RunProcesses, SandboxedCommandResult } from '../sandbox/sandboxed-process';
import { userFailure } from '../user-failure';
import type { CliInstall, CliInvocation } from './cli-harness';
import { CLI_HARNESS_ADAPTERS } from './cli-harnesses';
import type { HarnessGateway } from './harness-gateway';
import type { InvocationReport } from './harness-transcript';
import { createApprovalHookDir } from './approval-hook-dir';
import { writeHomeFiles } from './home-files';
import { createInvocationOutput, releaseInvocationOutput } from './invocation-output';
import type { invocationRecording } from './invocation-recording';

/** Linux's MAX_ARG_STRLEN (32 pages) less one for the terminating NUL. */
const MAX_ARGUMENT_BYTES = 128 * 1024 - 1;

/** What every invocation of one harness step shares. */
export interface HarnessInvocationScope {
  runId: string;
  turn: number;
  step: number;
  run: StepRun;
  type: CliHarnessType;
  install: CliInstall;
  recording: ReturnType<typeof invocationRecording>;
  processes: RunProcesses;
  disk: RunDiskQuota;
  skills: { name: string; content: string }[];
  networkPolicy: NetworkPolicy;
  channel: HarnessGateway;
  signal: AbortSignal;
  /** Set when `config.approval` gates the CLI's tool calls: ended once a call waits for a person. */
  approvalStop?: AbortSignal;
}

/** One invocation of the CLI: its exit and what its events reported. */
export interface InvocationRun {
  result: SandboxedCommandResult;
  report: InvocationReport;
}

/** The CLI session an invocation continues; `fork`: it is another run's (see `CliTurn.forkSession`). */
export interface ResumedSession {
  id: string;
  fork: boolean;
}

/**
 * Invokes the step's CLI once with `text` (resuming `session` when given) in the run's
 * sandbox, its output recorded as the transcript as it comes, then its raw log and usage;
 * `attemptKey` names the invocation in what it records.
 */
export function createInvoke(
  { config, sandbox, secretsKeyring }: Pick<ActivityDeps, 'config' | 'sandbox' | 'secretsKeyring'>,
  scope: HarnessInvocationScope,
) {
  const { runId, turn, step, run, type, install, recording, processes, channel, signal } = scope;

  /** The CLI's command line, environment and home files for this invocation. */
  async function cliInvocation(
    text: string,
    session: ResumedSession | undefined,
    hookDir: string | undefined,
  ): Promise<CliInvocation> {
    const invocation = CLI_HARNESS_ADAPTERS[type].invocation(install, {
      prompt: text,
      instructions: run.config.base_prompt?.trim() || undefined,
      resumeSession: session?.id,
      forkSession: session?.fork,
      newSessionId: randomUUID(),
      model: run.config.harness?.model_id || undefined,
      reasoningLevel: run.config.harness?.reasoning_level,
      maxTurns: Math.min(run.config.max_steps ?? config.agent.maxSteps, config.agent.maxSteps),
      gatewayUrl: await sandbox.gatewayUrl(channel.gateway),
      token: channel.token,
      mcpServers: decryptMcpServers(run.config.mcp_servers, secretsKeyring) ?? {},
      skills: scope.skills,
      home: sandbox.homePath(runId),
      workspace: processes.workspacePath,
      memoryMb: config.sandbox.limits.memoryMb,
      ...(hookDir ? { approvalHook: { dir: hookDir, nodePath: process.execPath } } : {}),
    });
    // The CLIs take the message as an argument, and Linux caps one argument (MAX_ARG_STRLEN).
    const longest = Math.max(...invocation.argv.map((a) => Buffer.byteLength(a)));
    if (longest > MAX_ARGUMENT_BYTES) {
      throw userFailure(
        `The message for ${CLI_HARNESSES[type].title} is ${longest} bytes; a CLI is given at most ${MAX_ARGUMENT_BYTES} bytes at once. Send a shorter prompt or follow-up (follow-ups sent while it works are handed over together).`,
        'invalid_request',
      );
    }
    return invocation;
  }

  return async function invoke(
    text: string,
    session: ResumedSession | undefined,
    attemptKey: string,
  ): Promise<InvocationRun> {
    const hooks = scope.approvalStop ? await createApprovalHookDir(config.workspace.dir) : undefined;
    try {
      const invocation = await cliInvocation(text, session, hooks?.dir);
      if (hooks) await hooks.write(invocation.readonlyFiles ?? {});
      return await runCli(invocation, attemptKey, hooks?.dir);
    } finally {
      await hooks?.remove();
    }
  };

  async function runCli(
    invocation: CliInvocation,
    attemptKey: string,
    hookDir: string | undefined,
  ): Promise<InvocationRun> {
    await writeHomeFiles(processes, sandbox.homePath(runId), invocation.homeFiles, signal);
    const at = { turn, step, attempt: attemptKey };
    const { transcript, raw, lines } = recording.recorder(at);
    const output = await createInvocationOutput(config.workspace.dir, runId, at, sandbox.processUid);
    let recorded = false;
    try {
      const result = await processes.runProgram({
        argv: invocation.argv,
        env: invocation.env,
        readonlyBinds: [...install.readonlyPaths, ...(hookDir ? [hookDir] : [])],
        gatewaySocket: channel.gateway.socketPath,
        policy: scope.networkPolicy,
        timeoutMs: config.agent.harnessTurnTimeoutSeconds * 1000,
        keepBytes: 16 * 1024,
        signal: AbortSignal.any([
          signal,
          channel.keyRefused.signal,
          ...(scope.approvalStop ? [scope.approvalStop] : []),
        ]),
        disk: scope.disk,
        stdoutFile: output.path,
        onStdout: (chunk) => lines.write(chunk),
      });
      lines.end();
      await transcript.flushed();
      await recording.recordRawLog(at, raw);
      await recording.recordUsage(at, transcript.report);
      recorded = true;
      return { result, report: transcript.report };
    } finally {
      await releaseInvocationOutput(output, recorded);
    }
  }
}

export type Invoke = ReturnType<typeof createInvoke>;
