import type { Context } from '@temporalio/activity';
import type { EntityManager } from 'typeorm';
import type { NetworkPolicy } from '../../core/network-policy';
import type { ToolCallRecord } from '../../core/run-events';
import { observeToolCall, observeToolCallNotRun } from '../../core/metrics';
import { recordFileArtifact } from '../../db/artifacts';
import { recordExternalReference } from '../../db/external-references';
import { appendRunEvent } from '../../db/run-events';
import { recordedEventKeys, type StoredRunEvent } from '../../db/run-event-reads';
import type { StepRun } from '../../db/run-step-reads';
import { servedModelIds } from '../../services/platform/model-list';
import type { AgentStepOutcome, OrchestrationCall } from '../../workflows/run-contract';
import type { ActivityDeps } from '../deps';
import type { ToolCall } from '../model/types';
import { RunDiskLimitError, runDiskQuota, type RunDiskQuota } from '../sandbox/run-disk';
import { loadRunNetworkPolicy } from '../sandbox/run-network-policy';
import { runProcesses, type RunProcesses } from '../sandbox/sandboxed-process';
import { workspaceFiles } from '../sandbox/workspace-files';
import { BUILTIN_TOOL_NAMES, runBuiltinTool, type ToolOutcome } from '../tools/builtin-tools';
import { offersFactoryFileTool, runValidateFactoryFile, VALIDATE_FACTORY_FILE_TOOL } from '../tools/factory-file-tool';
import { isOrchestrationTool } from '../tools/orchestration-tools';
import { capText } from '../tools/output-capture';
import { diskLimitFailure } from '../user-failure';
import type { McpSessionCache } from '../tools/mcp-sessions';
import { workspaceRepositories } from '../workspace/git';
import { loadAdvertisedSkills } from './advertised-skills';
import { createRecordChangedFiles } from './changed-files';
import { toolCallKeys } from './tool-call-keys';
import { createApprovalGate, type StepDecisions } from './approval-gate';
import { planModeRefusal, type MessageMode } from './plan-mode';
import { recordPlan } from '../../db/plans';
import { anyPlanRecorded } from '../../db/plan-reads';
import { SUBMIT_PLAN_TOOL } from '../tools/submit-plan-tool';
import { OPEN_PULL_REQUEST_TOOL } from '../../core/pull-request-tool';
import { createPullRequestCall } from './pull-request-call';

/**
 * Built-in tools a retried step runs again rather than calling them interrupted: those that only
 * read, `upload_artifact` and `submit_plan`, whose artifact is recorded once per tool-call key
 * however often it runs, `report_external_reference`, recorded once per URL, and
 * `open_pull_request`, whose commit is dated by the reply (the same commit again), pushed with a
 * lease and its one pull request per run and repository found again.
 */
const REPEATABLE_TOOLS = new Set([
  'read_file',
  'list_directory',
  'read_skill',
  'upload_artifact',
  SUBMIT_PLAN_TOOL,
  'report_external_reference',
  VALIDATE_FACTORY_FILE_TOOL,
  OPEN_PULL_REQUEST_TOOL,
]);

function hasSideEffects(tool: string): boolean {
  return !REPEATABLE_TOOLS.has(tool);
}

export const INTERRUPTED_TOOL_CALL =
  'This tool call was interrupted: the worker running it stopped before it finished, so its outcome is unknown (it may have done some, all or none of its work). It was not run again. Check the state of the workspace before deciding whether to repeat it.';

/** One step's tool calls, as the agent step hands them over. */
interface ToolCallsInput {
  runId: string;
  turn: number;
  step: number;
  run: StepRun;
  events: StoredRunEvent[];
  assistantKey: string;
  /** The reply was made by this attempt's model call, not read back from an earlier attempt. */
  replyIsNew: boolean;
  calls: ToolCallRecord[];
  workspace: string;
  ctx: Context;
  /** The mode of the newest user message: in plan mode only the tools that read run. */
  mode: MessageMode;
}

/** What a step's tool calls run with: the run's processes and files, its disk, network, skills and MCP servers. */
interface StepTools {
  processes: RunProcesses;
  files: ReturnType<typeof workspaceFiles>;
  disk: RunDiskQuota;
  networkPolicy: NetworkPolicy;
  advertised: Awaited<ReturnType<typeof loadAdvertisedSkills>>;
  mcp: Awaited<ReturnType<McpSessionCache['get']>> | undefined;
}

/** What an earlier attempt of the step already did: results recorded, calls started. */
interface EarlierAttempts {
  /** The call's result is recorded (under its key, or as a step from before the keys named it). */
  resultRecorded(keys: ReturnType<typeof toolCallKeys>, call: ToolCallRecord): boolean;
  started: Set<string>;
}

/** How one call went: its outcome, and the run's limit it reached, if any. */
interface CallRun {
  outcome: ToolOutcome;
  limitReached?: RunDiskLimitError;
}

export function createRunToolCalls(deps: ActivityDeps) {
  const { dataSource, config, mcpSessions, sandbox, blobs } = deps;
  const recordChangedFiles = createRecordChangedFiles(deps);
  const gate = createApprovalGate(deps);
  const pullRequestCall = createPullRequestCall(deps);
  return runToolCalls;

  /**
   * The tool calls of the step's reply, each recorded with its result; orchestration calls are
   * handed back to the workflow. Then what the calls changed: the run's disk, the files' diffs.
   * A step in plan mode refuses the calls that could change things, and ends the turn once it
   * has recorded a plan.
   */
  async function runToolCalls(input: ToolCallsInput): Promise<AgentStepOutcome> {
    const { turn, step, run, calls, ctx, mode } = input;
    const tools = await prepareTools(input);
    const earlier = await earlierAttempts(input);
    const decisions = await decide(input, tools, earlier);
    if (decisions.waiting) return { done: false, approval: decisions.waiting };
    const orchestration: OrchestrationCall[] = [];
    /** A limit of the run that a tool call reached: recorded as the call's result, then the run fails. */
    let limitReached: RunDiskLimitError | undefined;
    for (const [index, call] of calls.entries()) {
      // Keyed by where the call stands, not by the provider's id (providers may reuse ids).
      const keys = toolCallKeys(turn, step, index);
      if (earlier.resultRecorded(keys, call)) continue;
      const refusal = planModeRefusal(mode, call.name);
      if (refusal) {
        observeToolCallNotRun(BUILTIN_TOOL_NAMES.has(call.name) ? call.name : 'mcp', 'error');
        await recordResult(input, keys, call, { output: refusal, isError: true });
        continue;
      }
      const decided = decisions.decided.get(index);
      const notRun = decided && gate.resultOf(decided);
      if (notRun) {
        await recordResult(input, keys, call, notRun);
        continue;
      }
      if (run.factory_uid && isOrchestrationTool(call.name)) {
        // The workflow carries these out (child workflows, a durable wait) and records their
        // results; the step then runs again to finish.
        orchestration.push({ index, toolCallId: call.id, name: call.name, arguments: call.arguments });
        continue;
      }
      const ran = await runCall(input, tools, earlier, index, call);
      limitReached = ran.limitReached ?? limitReached;
      if (ctx.cancellationSignal.aborted) throw new Error('cancelled');
      await recordResult(input, keys, call, ran.outcome);
    }
    if (limitReached) throw diskLimitFailure(limitReached.message);
    if (orchestration.length) return { done: false, orchestration };
    // In plan mode nothing that writes ran: there is nothing to look for.
    if (mode === 'plan') return { done: await submittedPlan(input) };
    await checkWhatCallsChanged(input, tools);
    return { done: false };
  }

  /** Whether one of the step's `submit_plan` calls recorded a plan (in this attempt or an earlier one). */
  async function submittedPlan({ runId, turn, step, calls }: ToolCallsInput): Promise<boolean> {
    const keys = calls.flatMap((call, index) =>
      call.name === SUBMIT_PLAN_TOOL ? [toolCallKeys(turn, step, index).result] : [],
    );
    return keys.length > 0 && anyPlanRecorded(dataSource.manager, runId, keys);
  }

  /**
   * The decisions on the step's calls that wait for a person, or the one that must wait now. A
   * step from before the gate may have run some of its calls: what they changed is saved first,
   * since the run gives its workspace up while it waits.
   */
  async function decide(input: ToolCallsInput, tools: StepTools, earlier: EarlierAttempts): Promise<StepDecisions> {
    const { turn, step, calls, mode } = input;
    // A call plan mode refuses never runs, so it waits for no one.
    const open = calls.flatMap((call, index) =>
      earlier.resultRecorded(toolCallKeys(turn, step, index), call) || planModeRefusal(mode, call.name)
        ? []
        : [{ index, call }],
    );
    const decisions = await gate.decisions(input, open);
    if (decisions.waiting && open.length < calls.length) await checkWhatCallsChanged(input, tools);
    return decisions;
  }

  async function prepareTools({ runId, run }: ToolCallsInput): Promise<StepTools> {
    const processes = runProcesses(sandbox, runId);
    const disk = runDiskQuota(sandbox, runId, config.sandbox.workspaceMaxBytes);
    const files = workspaceFiles(processes);
    const networkPolicy = await loadRunNetworkPolicy(dataSource.manager, config, {
      environmentId: run.config.environment_id,
      teamId: run.team_id,
    });
    const advertised = await loadAdvertisedSkills(run, files);
    const mcp = Object.keys(run.config.mcp_servers ?? {}).length
      ? await mcpSessions.get(runId, run.config.mcp_servers!, networkPolicy)
      : undefined;
    return { processes, files, disk, networkPolicy, advertised, mcp };
  }

  async function earlierAttempts(input: ToolCallsInput): Promise<EarlierAttempts> {
    const { runId, turn, step, events, assistantKey, replyIsNew, calls } = input;
    const recorded = new Set(events.map((e) => e.eventKey));
    // A reply this attempt recorded itself is one no earlier attempt got past: none of its calls started.
    const started = replyIsNew
      ? new Set<string>()
      : await recordedEventKeys(
          dataSource.manager,
          runId,
          calls.map((_, index) => toolCallKeys(turn, step, index).started),
        );
    // Results this step recorded before the new keys: after its own reply, before any later one.
    const ownReplyAt = events.findIndex((e) => e.eventKey === assistantKey);
    const nextReplyAt = events.findIndex((e, i) => i > ownReplyAt && e.kind === 'assistant');
    const legacyResults = new Set(
      events
        .slice(ownReplyAt + 1, nextReplyAt < 0 ? undefined : nextReplyAt)
        .filter((e) => e.kind === 'tool_call')
        .map((e) => e.eventKey),
    );
    return {
      // `tool-<id>` is how steps recorded before the keys named their results.
      resultRecorded: (keys, call) => recorded.has(keys.result) || legacyResults.has(`tool-${call.id}`),
      started,
    };
  }

  /** Runs one call that is not the workflow's, by what it names: a built-in tool, the factory file check, an MCP tool. */
  async function runCall(
    input: ToolCallsInput,
    tools: StepTools,
    earlier: EarlierAttempts,
    index: number,
    call: ToolCallRecord,
  ): Promise<CallRun> {
    const { runId, turn, step, run } = input;
    const sideEffects = hasSideEffects(call.name);
    // It started before this step was interrupted (or in another attempt of the step, which may
    // still be running it), and may have done some or all of its work: running it again
    // blindly could push twice or migrate twice.
    if (sideEffects && earlier.started.has(toolCallKeys(turn, step, index).started)) {
      return { outcome: notRunAgain(call) };
    }
    if (
      call.name === VALIDATE_FACTORY_FILE_TOOL &&
      (await offersFactoryFileTool(dataSource.manager, runId, run.agent_skill))
    ) {
      return { outcome: await checkFactoryFile(input, tools, call) };
    }
    if (BUILTIN_TOOL_NAMES.has(call.name)) return runBuiltin(input, tools, index, call, sideEffects);
    if (tools.mcp) {
      if (!(await recordStarted(runId, turn, step, index, call))) return { outcome: notRunAgain(call) };
      const mcp = tools.mcp;
      const result = await observeToolCall('mcp', () =>
        mcp.call(call.name, call.arguments, input.ctx.cancellationSignal),
      );
      return { outcome: { output: capText(result.text, config.agent.toolOutputLimitBytes), isError: result.isError } };
    }
    observeToolCallNotRun('unknown', 'error');
    return { outcome: { output: `Unknown tool ${call.name}.`, isError: true } };
  }

  function checkFactoryFile({ workspace, ctx }: ToolCallsInput, tools: StepTools, call: ToolCallRecord) {
    return observeToolCall(call.name, () =>
      runValidateFactoryFile(call.arguments, {
        files: tools.files,
        workspacePath: tools.processes.workspacePath,
        repositories: workspaceRepositories(workspace),
        checks: { gitAllowedOwners: config.workspace.gitAllowedOwners, servedModels: servedModelIds(config) },
        outputLimitBytes: config.agent.toolOutputLimitBytes,
        signal: ctx.cancellationSignal,
      }),
    );
  }

  /** A built-in tool; one that writes is recorded as started first, and a run's disk limit it reaches is its result. */
  async function runBuiltin(
    input: ToolCallsInput,
    tools: StepTools,
    index: number,
    call: ToolCallRecord,
    sideEffects: boolean,
  ): Promise<CallRun> {
    const { runId, turn, step, ctx, mode } = input;
    const keys = toolCallKeys(turn, step, index);
    const tool = () =>
      runBuiltinTool(call.name, call.arguments, {
        processes: tools.processes,
        files: tools.files,
        networkPolicy: tools.networkPolicy,
        signal: ctx.cancellationSignal,
        commandTimeoutSeconds: config.agent.commandTimeoutSeconds,
        outputLimitBytes: config.agent.toolOutputLimitBytes,
        skills: tools.advertised,
        recordArtifact: (artifact) =>
          recordFileArtifact(dataSource, blobs, { runId, toolCallKey: keys.result, ...artifact }),
        recordExternalReference: (ref) => recordExternalReference(dataSource.manager, { runId, ...ref }),
        ...(mode === 'plan'
          ? {
              recordPlan: (plan: { title: string; markdown: string }) =>
                recordPlan(dataSource.manager, { runId, turn, sourceKey: keys.result, ...plan }),
            }
          : {}),
        openPullRequest: pullRequestCall(input),
        disk: tools.disk,
        memoryLimitMb: config.sandbox.limits.memoryMb,
      });
    if (sideEffects && !(await recordStarted(runId, turn, step, index, call))) return { outcome: notRunAgain(call) };
    try {
      return { outcome: await observeToolCall(call.name, tool) };
    } catch (err) {
      if (!(err instanceof RunDiskLimitError)) throw err;
      return {
        outcome: {
          output: err.toolOutput ? `${err.toolOutput}\n[sandbox] ${err.message}` : err.message,
          isError: true,
        },
        limitReached: err,
      };
    }
  }

  /** The call's result in the transcript (with the skill it loaded, in the same transaction). */
  async function recordResult(
    { runId, turn }: ToolCallsInput,
    keys: ReturnType<typeof toolCallKeys>,
    call: ToolCallRecord,
    outcome: ToolOutcome,
  ): Promise<void> {
    const output = outcome.output;
    const append = (manager: EntityManager) =>
      appendRunEvent(manager, {
        runId,
        eventKey: keys.result,
        kind: 'tool_call',
        turn,
        payload: {
          tool_call_id: call.id,
          name: call.name,
          input: call.arguments,
          output,
          is_error: outcome.isError,
          ...outcome.details,
        },
      });
    const skillLoad = outcome.skillLoad;
    if (skillLoad) {
      await dataSource.transaction(async (tx) => {
        await append(tx);
        await appendRunEvent(tx, {
          runId,
          eventKey: keys.skill,
          kind: 'skill_load',
          turn,
          payload: { name: String(call.arguments.name), input: skillLoad },
        });
      });
    } else {
      // One statement: atomic without a transaction, and one round trip instead of three.
      await append(dataSource.manager);
    }
  }

  /** After the calls: the run's disk, and the diff of the files they changed. */
  async function checkWhatCallsChanged({ runId, turn, step, calls, workspace, ctx }: ToolCallsInput, tools: StepTools) {
    // MCP servers write too (built-in tools that write check after themselves; the others only read).
    if (calls.some((c) => !BUILTIN_TOOL_NAMES.has(c.name) && !isOrchestrationTool(c.name))) {
      await tools.disk.check().catch((err: unknown) => {
        throw err instanceof RunDiskLimitError ? diskLimitFailure(err.message) : err;
      });
    }
    // Only a step that ran something that can change files has a diff to look for: git in the
    // sandbox is the dearest part of a step that only read.
    if (calls.some((c) => hasSideEffects(c.name) && !isOrchestrationTool(c.name))) {
      await recordChangedFiles(runId, turn, step, workspace, tools.processes, ctx.cancellationSignal);
    }
  }

  /**
   * Committed before a call with side effects runs, so that a retry knows it started. False when
   * it was recorded already: another attempt of the step started the call.
   */
  async function recordStarted(runId: string, turn: number, step: number, index: number, call: ToolCall) {
    return appendRunEvent(dataSource.manager, {
      runId,
      eventKey: toolCallKeys(turn, step, index).started,
      kind: 'tool_call_started',
      turn,
      payload: { tool_call_id: call.id, name: call.name, input: call.arguments, step, call_index: index },
    });
  }
}

/** A call that started in an earlier attempt, not run again: its outcome is unknown. */
function notRunAgain(call: ToolCallRecord): ToolOutcome {
  observeToolCallNotRun(BUILTIN_TOOL_NAMES.has(call.name) ? call.name : 'mcp', 'interrupted');
  return { output: INTERRUPTED_TOOL_CALL, isError: true, details: { interrupted: true } };
}
