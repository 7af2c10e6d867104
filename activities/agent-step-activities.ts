import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { PromptAttachment, RunEventPayloads } from '../core/run-events';
import { recordFileArtifact } from '../db/artifacts';
import { replaceHandoffAttachments, type FileContent } from '../db/attachments';
import {
  appendRunEvent,
  hasRunEvent,
  latestDiffDigests,
  recordedEventKeys,
  type StoredRunEvent,
} from '../db/run-events';
import { deliverFollowups, lockRun } from '../db/run-store';
import { addRunUsage } from '../db/run-usage';
import { observeToolCall, observeToolCallNotRun } from '../core/metrics';
import { DEFAULT_BASE_PROMPT } from '../services/runs/new-run';
import { listFactoryAgents } from '../db/agent-identities';
import { RunFailureType, type AgentStepOutcome, type OrchestrationCall } from '../workflows/run-contract';
import { isOrchestrationTool, ORCHESTRATION_TOOL_SPECS } from './tools/orchestration-tools';
import {
  offersFactoryFileTool,
  runValidateFactoryFile,
  VALIDATE_FACTORY_FILE_SPEC,
  VALIDATE_FACTORY_FILE_TOOL,
} from './tools/factory-file-tool';
import type { Logger } from '../core/logger';
import type { ActivityDeps } from './deps';
import { fitConversation } from './model/context-summary';
import { modelCostUsd } from './model/model-cost';
import { resolveProvider } from './model/resolve-provider';
import { ProviderNotConfiguredError, ProviderRejectedError, type AgentMessage, type ToolCall } from './model/types';
import { findBundledSkill, isSkillSpecAllowed } from '../services/skills/bundled-skills';
import {
  BUILTIN_TOOL_NAMES,
  BUILTIN_TOOLS,
  runBuiltinTool,
  type AdvertisedSkill,
  type ToolOutcome,
} from './tools/builtin-tools';
import { loadRunNetworkPolicy } from './sandbox/run-network-policy';
import { loadStepRun, type AdvertisedSkillRow, type StepRun } from '../db/run-step-reads';
import { RunDiskLimitError, runDiskQuota } from './sandbox/run-disk';
import { runProcesses, type RunProcesses } from './sandbox/sandboxed-process';
import { workspaceFiles, type WorkspaceFiles } from './sandbox/workspace-files';
import { capText } from './tools/output-capture';
import { loadStepConversation, type StepConversation } from './step-conversation';
import { diffAgainstHead, patchAgainst, workspaceRepositories } from './workspace/git';
import { baseCommitsFile, workspaceDir } from './workspace/workspace-paths';
import { userFailure, withHeartbeat } from './workspace-activities';

const MAX_DIFF_BYTES_PER_FILE = 256 * 1024;
const MAX_DIFF_BYTES_PER_STEP = 2 * 1024 * 1024;

/** lstat only: the worker never follows a link the run planted. */
function isRegularFile(file: string): boolean {
  try {
    return lstatSync(file).isFile();
  } catch {
    return false;
  }
}

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

/** A diff cut at `limit` bytes, with a marker saying how much was left out. */
function capDiff(diff: string, limit: number): string {
  const bytes = Buffer.byteLength(diff, 'utf8');
  if (bytes <= limit) return diff;
  const head = Buffer.from(diff, 'utf8').subarray(0, limit).toString('utf8');
  return `${head}\n[... diff cut: ${bytes - limit} more bytes of this file's diff are not shown ...]`;
}

/**
 * Built-in tools a retried step runs again rather than calling them interrupted: those that only
 * read, and `upload_artifact`, whose artifact is recorded once per tool-call key however often it runs.
 */
const REPEATABLE_TOOLS = new Set([
  'read_file',
  'list_directory',
  'read_skill',
  'upload_artifact',
  VALIDATE_FACTORY_FILE_TOOL,
]);

function hasSideEffects(tool: string): boolean {
  return !REPEATABLE_TOOLS.has(tool);
}

/** The largest handoff patch stored per repository; a larger one is left out with a notice. */
const MAX_HANDOFF_PATCH_BYTES = 32 * 1024 * 1024;

/** What the first message says about the request's attachments. */
function attachmentsNote(attachments: PromptAttachment[]): string {
  const lines = attachments.map((a) => `- ${a.path} (${a.mime_type}, ${a.size_bytes} bytes)`);
  return `Attached files (in your workspace):\n${lines.join('\n')}`;
}

export const INTERRUPTED_TOOL_CALL =
  'This tool call was interrupted: the worker running it stopped before it finished, so its outcome is unknown (it may have done some, all or none of its work). It was not run again. Check the state of the workspace before deciding whether to repeat it.';

const assistantEventKey = (turn: number, step: number) => `assistant-t${turn}-s${step}`;

/** Transcript keys of the calls of one step: by turn, step and position. */
export function toolCallKeys(turn: number, step: number, index: number) {
  const at = `t${turn}-s${step}-c${index}`;
  return { started: `tool-started-${at}`, result: `tool-${at}`, skill: `skill-${at}` };
}

export const PLAN_MODE_NOTE =
  '[Plan mode: work out a plan for this request and answer with it. Read whatever you need, but do not change files or run commands that change anything; the user will ask you to carry the plan out.]';

/** A message sent in plan mode (`mode: "plan"` on create or follow-up) carries the instruction. */
function inMode(mode: unknown, text: string): string {
  return mode === 'plan' ? `${PLAN_MODE_NOTE}\n\n${text}` : text;
}

/** The model's view of the conversation, rebuilt from the transcript. */
export function conversationFromEvents(events: Pick<StoredRunEvent, 'kind' | 'payload'>[]): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (const e of events) {
    const p = e.payload;
    if (e.kind === 'prompt') {
      // A run started from a skill alone has no prompt; providers want a first user message.
      const text = String(p.text ?? '').trim() ? String(p.text) : 'Follow the instructions of your skill.';
      const attachments = (p.attachments as PromptAttachment[] | undefined) ?? [];
      messages.push({
        role: 'user',
        content: inMode(p.mode, attachments.length ? `${text}\n\n${attachmentsNote(attachments)}` : text),
      });
    } else if (e.kind === 'followup') messages.push({ role: 'user', content: inMode(p.mode, String(p.message)) });
    else if (e.kind === 'assistant') {
      const toolCalls = (p.tool_calls as ToolCall[] | undefined) ?? [];
      messages.push({ role: 'assistant', content: String(p.text ?? ''), ...(toolCalls.length ? { toolCalls } : {}) });
    } else if (e.kind === 'tool_call') {
      messages.push({
        role: 'tool',
        toolCallId: String(p.tool_call_id),
        name: String(p.name),
        content: String(p.output),
        isError: p.is_error === true,
      });
    }
  }
  return messages;
}

/** An agent of the run's factory, as the system prompt introduces it. */
export interface FactoryColleague {
  uid: string;
  name: string;
  agentType: string;
  description: string | null;
}

export function systemPrompt(
  basePrompt: string | undefined,
  skills: AdvertisedSkillRow[],
  colleagues: FactoryColleague[] = [],
): string {
  const parts = [
    basePrompt?.trim() || DEFAULT_BASE_PROMPT,
    'Your workspace is the current directory of your tools; repositories of the environment are cloned into it. Paths are relative to the workspace root.',
  ];
  if (colleagues.length) {
    parts.push(
      `Agents of your factory you can give work to with dispatch_agent (then collect their results with wait_for_runs):\n${colleagues
        .map((c) => `- ${c.name} (${c.agentType}, uid ${c.uid})${c.description ? `: ${c.description}` : ''}`)
        .join('\n')}`,
    );
  }
  if (skills.length) {
    parts.push(
      `Skills you can load with the read_skill tool when a task matches one:\n${skills.map((s) => `- ${s.name}: ${s.description}`).join('\n')}`,
    );
  }
  return parts.join('\n\n');
}

/**
 * One step of the agent loop, on the worker that holds the workspace: deliver follow-ups, call
 * the model with the conversation and the tools, run the tool calls it asks for, record what
 * changed. Every write is keyed, so a retried step redoes at most the tool call in flight.
 */
export function createAgentStepActivities({ dataSource, config, logger, mcpSessions, sandbox, blobs }: ActivityDeps) {
  return {
    async runAgentStep({
      runId,
      turn,
      step,
    }: {
      runId: string;
      turn: number;
      step: number;
    }): Promise<AgentStepOutcome> {
      const ctx = Context.current();
      const log = logger.child({ run_id: runId, turn, step });
      return withHeartbeat(async () => {
        const workspace = workspaceDir(config.workspace.dir, runId);
        if (!existsSync(workspace)) {
          throw ApplicationFailure.nonRetryable(
            `The workspace of run ${runId} is not on this worker`,
            RunFailureType.WORKSPACE_LOST,
          );
        }
        const assistantKey = assistantEventKey(turn, step);
        await dataSource.transaction(async (tx) => {
          await lockRun(tx, runId);
          // A retried step whose model call is recorded finishes its tool calls first: a follow-up
          // may not land between the model's tool calls and their results.
          if (!(await hasRunEvent(tx, runId, assistantKey))) await deliverFollowups(tx, runId, turn);
        });
        const run = await loadStepRun(dataSource.manager, runId);
        // A summary is written before its step's reply and never takes in the last exchange: this
        // step's reply, what followed it and the latest entry are always among those loaded.
        const conversation = await loadStepConversation(dataSource.manager, runId);
        const { events } = conversation;
        let assistant = events.find((e) => e.eventKey === assistantKey)?.payload as
          RunEventPayloads['assistant'] | undefined;

        if (!assistant) {
          const last = events[events.length - 1];
          // Nothing new since the last reply (a follow-up already answered by a retried step).
          if (last?.kind === 'assistant' && !(last.payload.tool_calls as unknown[] | undefined)?.length) {
            await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
            return { done: true };
          }
          // The worker's limits are ceilings too (an operator may have lowered them since).
          const maxSteps = Math.min(run!.config.max_steps ?? config.agent.maxSteps, config.agent.maxSteps);
          const maxTokens = Math.min(run!.config.max_tokens ?? config.agent.maxTokens, config.agent.maxTokens);
          // Earlier replies of this turn may be among the entries a summary stands for: counted by
          // key then (a turn numbers its steps from 0).
          const stepsSoFar = conversation.summary
            ? (
                await recordedEventKeys(
                  dataSource.manager,
                  runId,
                  Array.from({ length: step }, (_, s) => assistantEventKey(turn, s)),
                )
              ).size
            : events.filter((e) => e.kind === 'assistant' && e.turn === turn).length;
          if (stepsSoFar >= maxSteps) {
            await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
            throw userFailure(
              `The agent reached its step limit of ${maxSteps} model calls in this turn without finishing (raise config.max_steps or AGENT_MAX_STEPS).`,
              'invalid_request',
            );
          }
          if (Number(run!.total_tokens) >= maxTokens) {
            await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
            throw userFailure(
              `The agent reached its token limit of ${maxTokens} tokens without finishing (raise config.max_tokens or AGENT_MAX_TOKENS).`,
              'invalid_request',
            );
          }
          assistant = await callModel(log, runId, turn, step, run!, conversation, ctx.cancellationSignal);
          log.debug('model replied', {
            model_id: assistant.model_id,
            total_tokens: assistant.total_tokens,
            finish_reason: assistant.finish_reason,
            tool_calls: assistant.tool_calls?.length ?? 0,
          });
        }

        const calls = assistant.tool_calls ?? [];
        if (calls.length === 0) {
          await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
          return { done: true };
        }
        const processes = runProcesses(sandbox, runId);
        const disk = runDiskQuota(sandbox.runPaths(runId), config.sandbox.workspaceMaxBytes);
        /** A limit of the run that a tool call reached: recorded as the call's result, then the run fails. */
        let limitReached: RunDiskLimitError | undefined;
        const files = workspaceFiles(processes);
        const networkPolicy = await loadRunNetworkPolicy(dataSource.manager, config, {
          environmentId: run!.config.environment_id,
          teamId: run!.team_id,
        });
        const advertised = await loadAdvertisedSkills(run!, files);
        const mcp = Object.keys(run!.config.mcp_servers ?? {}).length
          ? await mcpSessions.get(runId, run!.config.mcp_servers!, networkPolicy)
          : undefined;
        const recorded = new Set(events.map((e) => e.eventKey));
        const started = await recordedEventKeys(
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
        const orchestration: OrchestrationCall[] = [];
        for (const [index, call] of calls.entries()) {
          // Keyed by where the call stands, not by the provider's id (providers may reuse ids);
          // `tool-<id>` is how steps recorded before this change named their results.
          const keys = toolCallKeys(turn, step, index);
          if (recorded.has(keys.result) || legacyResults.has(`tool-${call.id}`)) continue;
          if (run!.factory_uid && isOrchestrationTool(call.name)) {
            // The workflow carries these out (child workflows, a durable wait) and records their
            // results; the step then runs again to finish.
            orchestration.push({ index, toolCallId: call.id, name: call.name, arguments: call.arguments });
            continue;
          }
          const sideEffects = hasSideEffects(call.name);
          let outcome: ToolOutcome;
          if (sideEffects && started.has(keys.started)) {
            // It started before this step was interrupted, and may have done some or all of its
            // work: running it again blindly could push twice or migrate twice.
            outcome = { output: INTERRUPTED_TOOL_CALL, isError: true, details: { interrupted: true } };
            observeToolCallNotRun(BUILTIN_TOOL_NAMES.has(call.name) ? call.name : 'mcp', 'interrupted');
          } else if (
            call.name === VALIDATE_FACTORY_FILE_TOOL &&
            (await offersFactoryFileTool(dataSource.manager, runId, run!.agent_skill))
          ) {
            outcome = await observeToolCall(call.name, () =>
              runValidateFactoryFile(call.arguments, {
                files,
                workspacePath: processes.workspacePath,
                repositories: workspaceRepositories(workspace),
                allowedSkill: (spec) => isSkillSpecAllowed(config.workspace.gitAllowedOwners, spec),
                outputLimitBytes: config.agent.toolOutputLimitBytes,
                signal: ctx.cancellationSignal,
              }),
            );
          } else if (BUILTIN_TOOL_NAMES.has(call.name)) {
            if (sideEffects) await recordStarted(runId, turn, step, index, call);
            const tool = () =>
              runBuiltinTool(call.name, call.arguments, {
                processes,
                files,
                networkPolicy,
                signal: ctx.cancellationSignal,
                commandTimeoutSeconds: config.agent.commandTimeoutSeconds,
                outputLimitBytes: config.agent.toolOutputLimitBytes,
                skills: advertised,
                recordArtifact: (artifact) =>
                  recordFileArtifact(dataSource, blobs, { runId, toolCallKey: keys.result, ...artifact }),
                disk,
                memoryLimitMb: config.sandbox.limits.memoryMb,
              });
            try {
              outcome = await observeToolCall(call.name, tool);
            } catch (err) {
              if (!(err instanceof RunDiskLimitError)) throw err;
              limitReached = err;
              outcome = { output: err.message, isError: true };
            }
          } else if (mcp) {
            await recordStarted(runId, turn, step, index, call);
            const result = await observeToolCall('mcp', () =>
              mcp.call(call.name, call.arguments, ctx.cancellationSignal),
            );
            outcome = { output: capText(result.text, config.agent.toolOutputLimitBytes), isError: result.isError };
          } else {
            outcome = { output: `Unknown tool ${call.name}.`, isError: true };
            observeToolCallNotRun('unknown', 'error');
          }
          if (ctx.cancellationSignal.aborted) throw new Error('cancelled');
          const output = outcome.output;
          await dataSource.transaction(async (tx) => {
            await appendRunEvent(tx, {
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
            if (outcome.skillLoad) {
              await appendRunEvent(tx, {
                runId,
                eventKey: keys.skill,
                kind: 'skill_load',
                turn,
                payload: { name: String(call.arguments.name), input: outcome.skillLoad },
              });
            }
          });
        }
        if (limitReached) throw userFailure(limitReached.message, 'budget_exceeded');
        if (orchestration.length) return { done: false, orchestration };
        // MCP servers write too (built-in tools that write check after themselves; the others only read).
        if (calls.some((c) => !BUILTIN_TOOL_NAMES.has(c.name) && !isOrchestrationTool(c.name))) {
          await disk.check().catch((err: unknown) => {
            throw err instanceof RunDiskLimitError ? userFailure(err.message, 'budget_exceeded') : err;
          });
        }
        // Only a step that ran something that can change files has a diff to look for: git in the
        // sandbox is the dearest part of a step that only read.
        if (calls.some((c) => hasSideEffects(c.name) && !isOrchestrationTool(c.name))) {
          await recordChangedFiles(runId, turn, step, workspace, processes, ctx.cancellationSignal);
        }
        return { done: false };
      });
    },
  };

  /** Committed before a call with side effects runs, so that a retry knows it started. */
  async function recordStarted(runId: string, turn: number, step: number, index: number, call: ToolCall) {
    await dataSource.transaction((tx) =>
      appendRunEvent(tx, {
        runId,
        eventKey: toolCallKeys(turn, step, index).started,
        kind: 'tool_call_started',
        turn,
        payload: { tool_call_id: call.id, name: call.name, input: call.arguments, step, call_index: index },
      }),
    );
  }

  async function callModel(
    log: Logger,
    runId: string,
    turn: number,
    step: number,
    run: StepRun,
    { events, summary }: StepConversation,
    signal: AbortSignal,
  ): Promise<RunEventPayloads['assistant']> {
    const modelId = run.config.model_id;
    let resolved;
    try {
      resolved = resolveProvider(config, modelId);
    } catch (err) {
      if (err instanceof ProviderNotConfiguredError) throw userFailure(err.message, 'feature_not_available');
      throw err;
    }
    const mcp = Object.keys(run.config.mcp_servers ?? {}).length
      ? await mcpSessions.get(
          runId,
          run.config.mcp_servers!,
          await loadRunNetworkPolicy(dataSource.manager, config, {
            environmentId: run.config.environment_id,
            teamId: run.team_id,
          }),
        )
      : undefined;
    const colleagues = run.factory_uid
      ? (await listFactoryAgents(dataSource.manager, run.team_id, run.factory_uid)).filter(
          (a) => a.uid !== run.executor_uid,
        )
      : [];
    const system = systemPrompt(run.config.base_prompt, run.advertised_skills ?? [], colleagues);
    const tools = [
      ...BUILTIN_TOOLS,
      ...(run.factory_uid ? ORCHESTRATION_TOOL_SPECS : []),
      ...(mcp?.tools.map((t) => t.spec) ?? []),
      ...((await offersFactoryFileTool(dataSource.manager, runId, run.agent_skill))
        ? [VALIDATE_FACTORY_FILE_SPEC]
        : []),
    ];
    const messages = await fitConversation(
      { dataSource, config, logger: log },
      {
        runId,
        turn,
        step,
        modelId,
        provider: resolved.provider,
        model: resolved.model,
        system,
        tools,
        messages: conversationFromEvents(events),
        eventKeys: events.map((e) => e.eventKey),
        summary,
        contextTokens: config.models.contextTokens[modelId] ?? config.models.defaultContextTokens,
        signal,
      },
    );
    let reply;
    try {
      reply = await resolved.provider.complete({
        model: resolved.model,
        system,
        messages,
        tools,
        signal,
      });
    } catch (err) {
      if (err instanceof ProviderRejectedError) {
        const code = err.status === 401 || err.status === 403 ? 'feature_not_available' : 'invalid_request';
        throw userFailure(`The model provider rejected the request (HTTP ${err.status}): ${err.message}`, code);
      }
      throw err;
    }
    const totalTokens = reply.inputTokens + reply.outputTokens;
    const payload: RunEventPayloads['assistant'] = {
      text: reply.text,
      model_id: modelId,
      total_tokens: totalTokens,
      input_tokens: reply.inputTokens,
      output_tokens: reply.outputTokens,
      finish_reason: reply.finishReason,
      ...(reply.toolCalls.length ? { tool_calls: reply.toolCalls } : {}),
    };
    const cost = modelCostUsd(config, modelId, reply.inputTokens, reply.outputTokens);
    await dataSource.transaction(async (tx) => {
      const wrote = await appendRunEvent(tx, {
        runId,
        eventKey: assistantEventKey(turn, step),
        kind: 'assistant',
        turn,
        payload,
      });
      if (wrote) await addRunUsage(tx, runId, totalTokens, cost);
    });
    return payload;
  }

  /** The skills offered to the agent, with their content (bundled, or read from the workspace). */
  async function loadAdvertisedSkills(run: StepRun, files: WorkspaceFiles): Promise<AdvertisedSkill[]> {
    const skills: AdvertisedSkill[] = [];
    for (const row of run.advertised_skills ?? []) {
      if (row.bundled_skill_id) {
        const bundled = findBundledSkill(row.bundled_skill_id);
        if (bundled) {
          skills.push({
            name: row.name,
            description: row.description,
            content: bundled.content,
            source: { bundled_skill_id: bundled.id },
          });
        }
      } else if (row.skill_path) {
        const content = await files.read(row.skill_path, 1024 * 1024).catch(() => undefined);
        if (content !== undefined) {
          skills.push({
            name: row.name,
            description: row.description,
            content,
            source: { skill_path: row.skill_path },
          });
        }
      }
    }
    return skills;
  }

  /**
   * At the end of a turn: one patch per repository of everything that differs from the commit the
   * workspace started from (git in the sandbox, `.gitignore` respected), stored as the turn's
   * handoff files (`workspace.patch` for the workspace itself, `<repo>.patch` for a clone). A
   * failure here is logged and noted, never the end of the run.
   */
  async function recordHandoff(
    log: Logger,
    runId: string,
    turn: number,
    workspace: string,
    signal: AbortSignal,
  ): Promise<void> {
    const processes = runProcesses(sandbox, runId);
    let bases: Record<string, string> = {};
    try {
      bases = JSON.parse(readFileSync(baseCommitsFile(config.workspace.dir, runId), 'utf8')) as Record<string, string>;
    } catch {
      // Provisioned before base commits were recorded: each repository's HEAD stands in.
    }
    const files: FileContent[] = [];
    const skipped: string[] = [];
    for (const repo of workspaceRepositories(workspace)) {
      const fileName = repo === '' ? 'workspace.patch' : `${repo}.patch`;
      try {
        const patch = await patchAgainst(processes, repo, bases[repo], signal, {
          hasGitignore: isRegularFile(path.join(workspace, repo, '.gitignore')),
          maxBytes: MAX_HANDOFF_PATCH_BYTES,
        });
        if (patch) files.push({ fileName, mimeType: 'text/x-diff', bytes: Buffer.from(patch, 'utf8') });
      } catch (err) {
        if (signal.aborted) throw err;
        skipped.push(`${repo || '.'}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    await replaceHandoffAttachments(dataSource, blobs, runId, turn, files);
    if (skipped.length) {
      log.warn('handoff patch left out', { skipped });
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: `handoff-t${turn}`,
          kind: 'notice',
          turn,
          payload: {
            message: `The handoff patch leaves out repositories git could not diff (the limit is ${MAX_HANDOFF_PATCH_BYTES} bytes per patch): ${skipped.join('; ')}`,
          },
        }),
      );
    }
  }

  /** Records the files this step changed, per repository, as unified diffs from git. */
  async function recordChangedFiles(
    runId: string,
    turn: number,
    step: number,
    workspace: string,
    processes: RunProcesses,
    signal: AbortSignal,
  ): Promise<void> {
    // Digests, not diffs: what a step reads stays small however long the run.
    const previous = await latestDiffDigests(dataSource.manager, runId);
    const changed: RunEventPayloads['files_changed']['files'] = [];
    let stepBytes = 0;
    const current = new Set<string>();
    for (const repo of workspaceRepositories(workspace)) {
      const repoName = repo === '' ? '.' : repo;
      let diffs: Map<string, string>;
      try {
        diffs = await diffAgainstHead(processes, repo, signal, {
          hasGitignore: isRegularFile(path.join(workspace, repo, '.gitignore')),
        });
      } catch (err) {
        if (signal.aborted) throw err;
        // A repository the agent broke, pointed elsewhere or gave a filter that outlasts the git
        // timeout has no diff to show this step; what it showed before stands.
        for (const key of previous.keys()) if (key.startsWith(`${repoName}\0`)) current.add(key);
        continue;
      }
      for (const [file, fullDiff] of diffs) {
        const key = `${repoName}\0${file}`;
        current.add(key);
        // Capped per file and per step, with a marker; the digest is that of the text recorded.
        let diff = capDiff(fullDiff, MAX_DIFF_BYTES_PER_FILE);
        if (previous.get(key) === md5(diff)) continue;
        if (stepBytes + diff.length > MAX_DIFF_BYTES_PER_STEP)
          diff = `[diff omitted: this step's diffs exceed ${MAX_DIFF_BYTES_PER_STEP} bytes]`;
        stepBytes += diff.length;
        changed.push({ repo: repoName, path: file, diff });
      }
    }
    for (const key of previous.keys()) {
      if (!current.has(key)) {
        const [repo, file] = key.split('\0') as [string, string];
        changed.push({ repo, path: file, diff: '' });
      }
    }
    if (!changed.length) return;
    await dataSource.transaction((tx) =>
      appendRunEvent(tx, {
        runId,
        eventKey: `files-t${turn}-s${step}`,
        kind: 'files_changed',
        turn,
        payload: { files: changed },
      }),
    );
  }
}
