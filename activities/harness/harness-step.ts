import type { Context } from '@temporalio/activity';
import { gatesAnything } from '../../core/approval-policy';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import type { Logger } from '../../core/logger';
import { observeHarnessInvocation } from '../../core/metrics';
import { recordHarnessStepFinished } from '../../db/harness-state';
import { appendRunEvent } from '../../db/run-events';
import { loadRunEvents } from '../../db/run-event-reads';
import type { StepRun } from '../../db/run-step-reads';
import type { AgentStepOutcome } from '../../workflows/run-contract';
import { loadAdvertisedSkills } from '../agent-step/advertised-skills';
import { createRecordChangedFiles } from '../agent-step/changed-files';
import { createCheckpointStep } from '../checkpoints/checkpoint-step';
import { createRecordHandoff } from '../agent-step/handoff-patch';
import type { ActivityDeps } from '../deps';
import { RunDiskLimitError, runDiskQuota, type RunDiskQuota } from '../sandbox/run-disk';
import { loadRunNetworkPolicy } from '../sandbox/run-network-policy';
import { runProcesses, type RunProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { diskLimitFailure, userFailure } from '../user-failure';
import type { CliInstall } from './cli-harness';
import { installedHarness } from './cli-harnesses';
import { harnessCredential, HarnessCredentialError, type HarnessCredential } from './harness-credential';
import { claimHarnessStep } from './harness-claim';
import { createHarnessApprovals, decisionMessage } from './harness-approvals';
import type { GatedToolCall } from './model-gateway';
import { latestMessageMode } from '../../db/followup-reads';
import { recordPlan } from '../../db/plans';
import { messageMode, planFromAnswer } from '../agent-step/plan-mode';
import { budgetSpent, openHarnessGateway, type HarnessGateway } from './harness-gateway';
import { createInvoke, type HarnessInvocationScope, type Invoke, type InvocationRun } from './harness-invocation';
import { invocationFailure, type InvocationFailure } from './invocation-failure';
import { invocationRecording } from './invocation-recording';
import { sessionRecap } from './session-recap';

const SKILL_DIR_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** One harness step as the agent step hands it over. */
export interface HarnessStepInput {
  runId: string;
  turn: number;
  step: number;
  run: StepRun;
  type: CliHarnessType;
  workspace: string;
  ctx: Context;
  log: Logger;
}

type InvokeClaim = Extract<Awaited<ReturnType<typeof claimHarnessStep>>, { kind: 'invoke' }>;

/**
 * One invocation of a harness's CLI, the harness's step: hand it the prompt or the follow-ups
 * since its last invocation (resuming its session), run it in the run's sandbox with the model
 * gateway as its provider, record its events as the run's transcript as they come, and its
 * usage. A retried invocation (a worker that died mid-turn) resumes the same session.
 */
export function createHarnessStep(deps: ActivityDeps) {
  const { dataSource, config, sandbox, blobs, secretsKeyring } = deps;
  const recordHandoff = createRecordHandoff(deps);
  const recordChangedFiles = createRecordChangedFiles(deps);
  const checkpointStep = createCheckpointStep(deps);

  return async function runHarnessStep(input: HarnessStepInput): Promise<AgentStepOutcome> {
    const { runId, turn, run, type } = input;
    const { install, recording } = await startRecording(input);
    const ready = assertInstalled(install, type);
    const maxTokens = assertTokensLeft(run);
    const gated = isGated(input);
    // A call of this step waits (its step run again, by a retry): it goes on waiting; decided,
    // the resumed session is told the decision.
    const decision = gated ? await decisionMessage(deps, input) : undefined;
    if (decision && 'waiting' in decision) return { done: false, approval: decision.waiting };
    const claim = await claimHarnessStep(dataSource, {
      runId,
      turn,
      stepKey: stepKeyOf(input),
      harness: type,
      title: CLI_HARNESSES[type].title,
      ...(decision ? { decided: decision.message } : {}),
    });
    if (claim.kind === 'turn-ended') return { done: true, turnEnded: true };
    if (claim.kind === 'nothing-new') return { done: true };
    const credential = await credentialOf(run, type);
    const sandboxed = await prepareSandbox(input);
    const approvals = gated ? createHarnessApprovals(deps, input) : undefined;
    const channel = await openHarnessGateway(deps, {
      runId,
      type,
      run,
      maxTokens,
      credential,
      ...(approvals ? { onToolCall: (call: GatedToolCall) => approvals.decide(call) } : {}),
    });
    const closeGateway = () => void channel.gateway.close();
    input.ctx.cancellationSignal.addEventListener('abort', closeGateway, { once: true });
    try {
      const scope = {
        ...input,
        ...sandboxed,
        install: ready,
        recording,
        channel,
        signal: input.ctx.cancellationSignal,
        ...(approvals ? { approvalStop: approvals.stop } : {}),
      };
      const invoked = await invokeResumingSession(scope, createInvoke(deps, scope), claim);
      const waiting = approvals?.waiting;
      if (waiting && !input.ctx.cancellationSignal.aborted) {
        // What the CLI did before the call that waits (its session too) is kept in a checkpoint
        // of its own: the run gives its workspace up while it is blocked. Not at `step + 1`, the
        // step's own once it ends (a step keeps its first); files_changed waits for that end.
        await checkpointStep(runId, turn, input.step + 2 + waiting.callIndex);
        return { done: false, approval: { approvalId: waiting.approvalId, expiresAt: waiting.expiresAt } };
      }
      return await settleInvocation(input, { ...invoked, ...sandboxed, channel, credential });
    } finally {
      input.ctx.cancellationSignal.removeEventListener('abort', closeGateway);
      await channel.gateway.close();
    }
  };

  /**
   * How the step's invocations are recorded; what an attempt that died with its worker printed is
   * on disk, and is recorded before anything can fail this step, and before its session resumes.
   */
  async function startRecording({ runId, run, type }: HarnessStepInput) {
    const install = installedHarness(type);
    const recording = invocationRecording(
      { dataSource, blobs, outputLimitBytes: config.agent.toolOutputLimitBytes, workspaceRoot: config.workspace.dir },
      {
        runId,
        type,
        title: CLI_HARNESSES[type].title,
        version: 'version' in install ? install.version : undefined,
        model: run.config.harness?.model_id || undefined,
      },
    );
    await recording.recordLeftOvers();
    return { install, recording };
  }

  function assertInstalled(install: CliInstall | { missing: string }, type: CliHarnessType): CliInstall {
    if (!('missing' in install)) return install;
    throw userFailure(
      `${CLI_HARNESSES[type].title} cannot run on worker ${config.worker.id}: ${install.missing}.`,
      'environment_setup_failed',
    );
  }

  /** The run's token budget, refused once spent. */
  function assertTokensLeft(run: StepRun): number {
    const maxTokens = Math.min(run.config.max_tokens ?? config.agent.maxTokens, config.agent.maxTokens);
    if (Number(run.total_tokens) >= maxTokens) {
      throw userFailure(`The run's ${budgetSpent(maxTokens)}`, 'budget_exceeded');
    }
    return maxTokens;
  }

  async function credentialOf(run: StepRun, type: CliHarnessType): Promise<HarnessCredential> {
    try {
      return await harnessCredential(dataSource.manager, config, secretsKeyring, run, type);
    } catch (err) {
      if (err instanceof HarnessCredentialError) throw userFailure(err.message, 'feature_not_available');
      throw err;
    }
  }

  /** The run's processes, its disk (measured at once), the skills its CLI is given and its network policy. */
  async function prepareSandbox({ runId, run }: HarnessStepInput) {
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
    return { processes, disk, skills, networkPolicy };
  }

  /**
   * Invokes the CLI with what the claim handed over, resuming its session (a fork's first
   * invocation: its source's, as of the fork's checkpoint). A session that is not in this home
   * (the workspace was rebuilt elsewhere, or the checkpoint lacks its files) fails before any
   * model call: a new one then starts, told the conversation so far.
   */
  async function invokeResumingSession(
    scope: HarnessInvocationScope,
    invoke: Invoke,
    { prompt, state, pending, attempt }: InvokeClaim,
  ): Promise<InvocationRun> {
    const session = state.sessionId ? { id: state.sessionId, fork: state.sessionInherited } : undefined;
    const invoked = await invoke(prompt, session, String(attempt));
    const { gateway } = scope.channel;
    if (!session || gateway.forwarded !== 0 || invoked.result.exitCode === 0 || scope.signal.aborted) {
      return invoked;
    }
    const { runId, turn } = scope;
    const title = CLI_HARNESSES[scope.type].title;
    const whose = session.fork
      ? `the session ${session.id} of the run it was forked from (the checkpoint's files do not hold it)`
      : `its session ${session.id} on this worker`;
    await appendRunEvent(dataSource.manager, {
      runId,
      eventKey: `h-lost-${stepKeyOf(scope)}-i${attempt}`,
      kind: 'notice',
      turn,
      payload: {
        message: `${title} could not resume ${whose}; a new session continues the conversation from its transcript.`,
        level: 'warning',
      },
    });
    const earlier = await loadRunEvents(dataSource.manager, runId, {
      kinds: ['prompt', 'followup', 'assistant'],
      withoutFullOutput: true,
    });
    const handedNow = new Set(pending.map((p) => p.id));
    const before = earlier.filter((e) => !handedNow.has(e.id));
    return invoke(sessionRecap(before, prompt), undefined, `${attempt}r`);
  }

  /**
   * What the invocation's end means for the step: cancelled, failed (retried, or the run's
   * failure, its handoff recorded first), or done, the files it changed and its handoff recorded.
   */
  /**
   * An invocation for a message sent in plan mode: the CLI's final answer is the plan's next
   * version (a `PLAN` artifact), once per step whatever is retried. (A CLI has no submit_plan,
   * and plan mode's refusals are the service's own agent's: its prompt asks it not to change
   * anything.)
   */
  async function recordAnswerAsPlan(runId: string, turn: number, step: number, answer: string | undefined) {
    if (messageMode(await latestMessageMode(dataSource.manager, runId)) !== 'plan') return;
    const plan = planFromAnswer(answer ?? '');
    if (plan)
      await recordPlan(dataSource.manager, { runId, turn, sourceKey: `harness-${stepKeyOf({ turn, step })}`, ...plan });
  }

  async function settleInvocation(
    { runId, turn, step, type, workspace, ctx, log }: HarnessStepInput,
    {
      result,
      report,
      channel,
      credential,
      disk,
      processes,
    }: InvocationRun & {
      channel: HarnessGateway;
      credential: HarnessCredential;
      disk: RunDiskQuota;
      processes: RunProcesses;
    },
  ): Promise<AgentStepOutcome> {
    const signal = ctx.cancellationSignal;
    if (result.cancelled && signal.aborted) {
      observeHarnessInvocation(type, 'cancelled');
      throw new Error('cancelled');
    }
    await recordChangedFiles(runId, turn, step, workspace, processes, signal);
    const gateway = channel.gateway;
    const failure =
      invocationFailure({
        title: CLI_HARNESSES[type].title,
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
    await recordAnswerAsPlan(runId, turn, step, report.result?.text);
    await recordHarnessStepFinished(dataSource.manager, runId, stepKeyOf({ turn, step }));
    await recordHandoff(log, runId, turn, workspace, signal);
    return { done: true };
  }
}

const stepKeyOf = ({ turn, step }: { turn: number; step: number }) => `t${turn}-s${step}`;

/** Whether `config.approval` gates this run's CLI calls (only for a CLI that can be gated). */
const isGated = ({ run, type }: Pick<HarnessStepInput, 'run' | 'type'>) =>
  !!CLI_HARNESSES[type].approvals && gatesAnything(run.config.approval);

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
