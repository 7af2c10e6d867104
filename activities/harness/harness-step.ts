import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, chmod } from 'node:fs/promises';
import type { Context } from '@temporalio/activity';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import type { Logger } from '../../core/logger';
import { decryptMcpServers } from '../../core/secrets';
import { observeHarnessInvocation, observeHarnessTokens } from '../../core/metrics';
import { loadGatewayAdmission } from '../../db/harness-state-reads';
import { recordHarnessStepFinished } from '../../db/harness-state';
import { appendRunEvent } from '../../db/run-events';
import { loadRunEvents } from '../../db/run-event-reads';
import { addRunUsage } from '../../db/run-usage';
import type { StepRun } from '../../db/run-step-reads';
import type { AgentStepOutcome } from '../../workflows/run-contract';
import { loadAdvertisedSkills } from '../agent-step/advertised-skills';
import { createRecordChangedFiles } from '../agent-step/changed-files';
import { createRecordHandoff } from '../agent-step/handoff-patch';
import type { ActivityDeps } from '../deps';
import { modelCostUsd } from '../model/model-cost';
import { RunDiskLimitError, runDiskQuota, type RunDiskQuota } from '../sandbox/run-disk';
import { loadRunNetworkPolicy } from '../sandbox/run-network-policy';
import { runProcesses } from '../sandbox/sandboxed-process';
import { socketPath } from '../sandbox/socket-path';
import { workspaceFiles } from '../sandbox/workspace-files';
import { diskLimitFailure, userFailure } from '../user-failure';
import { gatewaySocketDir } from '../workspace/workspace-paths';
import { CLI_HARNESS_ADAPTERS, installedHarness } from './cli-harnesses';
import { harnessCredential, HarnessCredentialError } from './harness-credential';
import { claimHarnessStep } from './harness-claim';
import { invocationFailure, type InvocationFailure } from './invocation-failure';
import { createInvocationOutput, releaseInvocationOutput } from './invocation-output';
import { invocationRecording } from './invocation-recording';
import { writeHomeFiles } from './home-files';
import { openGatewayChannel } from './model-gateway';
import { sessionRecap } from './session-recap';

/** Linux's MAX_ARG_STRLEN (32 pages) less one for the terminating NUL. */
const MAX_ARGUMENT_BYTES = 128 * 1024 - 1;

const SKILL_DIR_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * One invocation of a harness's CLI, the harness's step: hand it the prompt or the follow-ups
 * since its last invocation (resuming its session), run it in the run's sandbox with the model
 * gateway as its provider, record its events as the run's transcript as they come, and its
 * usage. A retried invocation (a worker that died mid-turn) resumes the same session.
 */
export function createHarnessStep(deps: ActivityDeps) {
  const { dataSource, config, sandbox, blobs, secretsKey } = deps;
  const recordHandoff = createRecordHandoff(deps);
  const recordChangedFiles = createRecordChangedFiles(deps);

  return async function runHarnessStep(input: {
    runId: string;
    turn: number;
    step: number;
    run: StepRun;
    type: CliHarnessType;
    workspace: string;
    ctx: Context;
    log: Logger;
  }): Promise<AgentStepOutcome> {
    const { runId, turn, step, run, type, workspace, ctx, log } = input;
    const spec = CLI_HARNESSES[type];
    const signal = ctx.cancellationSignal;
    const stepKey = `t${turn}-s${step}`;

    const install = installedHarness(type);
    const { recorder, recordRawLog, recordUsage, recordLeftOvers } = invocationRecording(
      {
        dataSource,
        blobs,
        outputLimitBytes: config.agent.toolOutputLimitBytes,
        workspaceRoot: config.workspace.dir,
      },
      {
        runId,
        type,
        title: spec.title,
        version: 'version' in install ? install.version : undefined,
        model: run.config.harness?.model_id || undefined,
      },
    );
    // What an attempt that died with its worker printed is on disk: recorded before anything can
    // fail this step, and before its session resumes.
    await recordLeftOvers();

    if ('missing' in install) {
      throw userFailure(
        `${spec.title} cannot run on worker ${config.worker.id}: ${install.missing}.`,
        'environment_setup_failed',
      );
    }
    const maxTokens = Math.min(run.config.max_tokens ?? config.agent.maxTokens, config.agent.maxTokens);
    if (Number(run.total_tokens) >= maxTokens) {
      throw userFailure(`The run's ${budgetSpent(maxTokens)}`, 'budget_exceeded');
    }

    const claim = await claimHarnessStep(dataSource, { runId, turn, stepKey, harness: type, title: spec.title });
    if (claim.kind === 'turn-ended') return { done: true, turnEnded: true };
    if (claim.kind === 'nothing-new') return { done: true };
    const { prompt, state, pending, attempt } = claim;

    let credential;
    try {
      credential = await harnessCredential(dataSource.manager, config, secretsKey, run, type);
    } catch (err) {
      if (err instanceof HarnessCredentialError) throw userFailure(err.message, 'feature_not_available');
      throw err;
    }
    const processes = runProcesses(sandbox, runId);
    // Measured while the CLI works (its own tools write where the service cannot see each write),
    // and once more after it: at the limit, the run fails as an agent step's command would fail it.
    // The CLI's output is in the run's state, so within the limit too.
    const disk = runDiskQuota(sandbox, runId, config.sandbox.workspaceMaxBytes);
    await checkDisk(disk);
    const files = workspaceFiles(processes);
    // Written under the CLI's home by name: a name from a repository's front matter is a path part only if plain.
    const skills = (await loadAdvertisedSkills(run, files))
      .filter((s) => SKILL_DIR_NAME.test(s.name))
      .map((s) => ({ name: s.name, content: s.content }));
    const networkPolicy = await loadRunNetworkPolicy(dataSource.manager, config, {
      environmentId: run.config.environment_id,
      teamId: run.team_id,
    });

    const socketDir = gatewaySocketDir(config.workspace.dir);
    await mkdir(socketDir, { recursive: true });
    await chmod(socketDir, 0o711);
    // Good for this invocation's channel only: it dies with the channel.
    const token = `arg_${randomBytes(24).toString('base64url')}`;
    // Stops the CLI once the provider refused the key: its own retries could only be refused again.
    const keyRefused = new AbortController();
    const gateway = await openGatewayChannel({
      socketPath: socketPath(socketDir, `${randomBytes(12).toString('base64url')}.sock`),
      token,
      provider: spec.provider,
      baseUrl: credential.baseUrl,
      credential: credential.credential,
      idleTimeoutMs: config.models.requestTimeoutSeconds * 1000,
      onCredentialRefused: () => keyRefused.abort(),
      admit: async () => {
        const now = await loadGatewayAdmission(dataSource.manager, runId);
        if (!now || now.state !== 'INPROGRESS') {
          return { admitted: false, reason: 'not_in_progress', message: 'this run is not in progress.' };
        }
        if (now.totalTokens >= maxTokens)
          return { admitted: false, reason: 'budget_exceeded', message: `this run's ${budgetSpent(maxTokens)}` };
        return { admitted: true };
      },
      onUsage: async (usage) => {
        const model = `${spec.provider}/${usage.model ?? run.config.harness?.model_id ?? 'default'}`;
        const cost = modelCostUsd(
          config,
          model,
          usage.totalTokens - (usage.outputTokens ?? 0),
          usage.outputTokens ?? 0,
        );
        await addRunUsage(dataSource.manager, runId, usage.totalTokens, cost);
        observeHarnessTokens(type, usage);
      },
    });
    const closeGateway = () => void gateway.close();
    signal.addEventListener('abort', closeGateway, { once: true });
    try {
      const invoke = async (text: string, resumeSession: string | undefined, attemptKey: string) => {
        const invocation = CLI_HARNESS_ADAPTERS[type].invocation(install, {
          prompt: text,
          instructions: run.config.base_prompt?.trim() || undefined,
          resumeSession,
          newSessionId: randomUUID(),
          model: run.config.harness?.model_id || undefined,
          reasoningLevel: run.config.harness?.reasoning_level,
          maxTurns: Math.min(run.config.max_steps ?? config.agent.maxSteps, config.agent.maxSteps),
          gatewayUrl: await sandbox.gatewayUrl(gateway),
          token,
          mcpServers: decryptMcpServers(run.config.mcp_servers, secretsKey) ?? {},
          skills,
          home: sandbox.homePath(runId),
          workspace: processes.workspacePath,
          memoryMb: config.sandbox.limits.memoryMb,
        });
        // The CLIs take the message as an argument, and Linux caps one argument (MAX_ARG_STRLEN).
        const longest = Math.max(...invocation.argv.map((a) => Buffer.byteLength(a)));
        if (longest > MAX_ARGUMENT_BYTES) {
          throw userFailure(
            `The message for ${spec.title} is ${longest} bytes; a CLI is given at most ${MAX_ARGUMENT_BYTES} bytes at once. Send a shorter prompt or follow-up (follow-ups sent while it works are handed over together).`,
            'invalid_request',
          );
        }
        await writeHomeFiles(processes, sandbox.homePath(runId), invocation.homeFiles, signal);
        const at = { turn, step, attempt: attemptKey };
        const { transcript, raw, lines } = recorder(at);
        const output = await createInvocationOutput(config.workspace.dir, runId, at, sandbox.processUid);
        let recorded = false;
        try {
          const result = await processes.runProgram({
            argv: invocation.argv,
            env: invocation.env,
            readonlyBinds: install.readonlyPaths,
            gatewaySocket: gateway.socketPath,
            policy: networkPolicy,
            timeoutMs: config.agent.harnessTurnTimeoutSeconds * 1000,
            keepBytes: 16 * 1024,
            signal: AbortSignal.any([signal, keyRefused.signal]),
            disk,
            stdoutFile: output.path,
            onStdout: (chunk) => lines.write(chunk),
          });
          lines.end();
          await transcript.flushed();
          await recordRawLog(at, raw);
          await recordUsage(at, transcript.report);
          recorded = true;
          return { result, report: transcript.report };
        } finally {
          await releaseInvocationOutput(output, recorded);
        }
      };

      let { result, report } = await invoke(prompt, state.sessionId ?? undefined, String(attempt));
      // A session that is not in this home (the workspace was rebuilt elsewhere) fails before any
      // model call: start a new one that is told the conversation so far.
      if (state.sessionId && gateway.forwarded === 0 && result.exitCode !== 0 && !signal.aborted) {
        await appendRunEvent(dataSource.manager, {
          runId,
          eventKey: `h-lost-${stepKey}-i${attempt}`,
          kind: 'notice',
          turn,
          payload: {
            message: `${spec.title} could not resume its session ${state.sessionId} on this worker; a new session continues the conversation from its transcript.`,
            level: 'warning',
          },
        });
        const earlier = await loadRunEvents(dataSource.manager, runId, {
          kinds: ['prompt', 'followup', 'assistant'],
          withoutFullOutput: true,
        });
        const handedNow = new Set(pending.map((p) => p.id));
        const before = earlier.filter((e) => !handedNow.has(e.id));
        ({ result, report } = await invoke(sessionRecap(before, prompt), undefined, `${attempt}r`));
      }
      if (result.cancelled && signal.aborted) {
        observeHarnessInvocation(type, 'cancelled');
        throw new Error('cancelled');
      }
      await recordChangedFiles(runId, turn, step, workspace, processes, signal);
      const failure =
        invocationFailure({
          title: spec.title,
          result,
          report,
          gateway,
          secretName: credential.secretName,
          memoryMb: config.sandbox.limits.memoryMb,
        }) ?? (await diskFailure(disk));
      observeHarnessInvocation(type, failure ? (failure.retry ? 'retried' : 'failed') : 'ok');
      if (failure?.retry) throw new Error(failure.message);
      if (failure) {
        await recordHandoff(log, runId, turn, workspace, signal);
        throw failureOf(failure);
      }
      await recordHarnessStepFinished(dataSource.manager, runId, stepKey);
      await recordHandoff(log, runId, turn, workspace, signal);
      return { done: true };
    } finally {
      signal.removeEventListener('abort', closeGateway);
      await gateway.close();
    }
  };
}

async function checkDisk(disk: RunDiskQuota): Promise<void> {
  const failure = await diskFailure(disk);
  if (failure) throw failureOf(failure);
}

function failureOf(failure: InvocationFailure): Error {
  return failure.diskLimit ? diskLimitFailure(failure.message) : userFailure(failure.message, failure.code);
}

/** The run's files are past its limit: what the CLI wrote in its last seconds, after the last measurement. */
async function diskFailure(disk: RunDiskQuota): Promise<InvocationFailure | undefined> {
  try {
    await disk.check();
    return undefined;
  } catch (err) {
    if (!(err instanceof RunDiskLimitError)) throw err;
    return { message: err.message, code: 'budget_exceeded', diskLimit: true };
  }
}

function budgetSpent(maxTokens: number): string {
  return `token budget of ${maxTokens} tokens is spent (raise config.max_tokens or AGENT_MAX_TOKENS).`;
}
