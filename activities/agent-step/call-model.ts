import type { Context } from '@temporalio/activity';
import type { RunEventPayloads } from '../../core/run-events';
import type { Logger } from '../../core/logger';
import { listFactoryAgents } from '../../db/agent-identity-reads';
import { databaseStateOf } from '../../db/data-source';
import type { StepRun } from '../../db/run-step-reads';
import { loadRunEventByKey } from '../../db/run-event-reads';
import { appendReplyWithUsage } from '../../db/run-usage';
import type { ActivityDeps } from '../deps';
import { fitConversation } from '../model/context-summary';
import { modelCostUsd } from '../model/model-cost';
import { resolveProvider } from '../model/resolve-provider';
import { ProviderNotConfiguredError, ProviderRejectedError } from '../model/types';
import { loadRunNetworkPolicy } from '../sandbox/run-network-policy';
import type { StepConversation } from '../step-conversation';
import { offeredFactoryFileTool, VALIDATE_FACTORY_FILE_SPEC } from '../tools/factory-file-tool';
import { BUILTIN_TOOLS } from '../tools/builtin-tools';
import { ORCHESTRATION_TOOL_SPECS } from '../tools/orchestration-tools';
import { userFailure } from '../user-failure';
import { writeThroughOutage } from '../write-through-outage';
import { conversationFromEvents } from './conversation-from-events';
import { PLAN_MODE_TOOLS, type MessageMode } from './plan-mode';
import { systemPrompt } from './system-prompt';
import { SUBMIT_PLAN_SPEC } from '../tools/submit-plan-tool';
import { OPEN_PULL_REQUEST_SPEC } from '../tools/open-pull-request-tool';
import type { ToolSpec } from '../model/types';
import { assistantEventKey } from './tool-call-keys';

export function createCallModel({ dataSource, config, mcpSessions }: ActivityDeps) {
  return callModel;

  async function callModel(
    log: Logger,
    runId: string,
    turn: number,
    step: number,
    run: StepRun,
    { events, summary }: StepConversation,
    ctx: Context,
    mode: MessageMode,
  ): Promise<{ reply: RunEventPayloads['assistant']; recorded: boolean }> {
    const modelId = run.config.model_id;
    const signal = ctx.cancellationSignal;
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
    const tools = offeredTools(mode, [
      ...BUILTIN_TOOLS,
      ...(run.factory_uid ? ORCHESTRATION_TOOL_SPECS : []),
      ...(mcp?.tools.map((t) => t.spec) ?? []),
      ...(offeredFactoryFileTool(run) ? [VALIDATE_FACTORY_FILE_SPEC] : []),
      ...(run.config.delivery?.pull_request ? [OPEN_PULL_REQUEST_SPEC] : []),
    ]);
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
    const eventKey = assistantEventKey(turn, step);
    // From here on the reply is paid for: the step records it or waits for PostgreSQL to take it.
    return writeThroughOutage(
      ctx,
      log,
      "the model's reply",
      () => databaseStateOf(dataSource),
      async () => {
        if (await appendReplyWithUsage(dataSource.manager, { runId, eventKey, turn, payload }, totalTokens, cost)) {
          return { reply: payload, recorded: true };
        }
        // Another attempt of this step recorded its reply first (or this attempt's write went through
        // though its answer was lost): the step goes on with the stored one, whose tool calls that
        // attempt may have started.
        const stored = await loadRunEventByKey(dataSource.manager, runId, eventKey);
        if (!stored) throw new Error(`the reply ${eventKey} of run ${runId} was neither written nor found`);
        return { reply: stored.payload as RunEventPayloads['assistant'], recorded: false };
      },
    );
  }
}

/** In plan mode, the tools that read, and `submit_plan` (never `open_pull_request`); otherwise all of them. */
function offeredTools(mode: MessageMode, tools: ToolSpec[]): ToolSpec[] {
  return mode === 'plan' ? [...tools.filter((t) => PLAN_MODE_TOOLS.has(t.name)), SUBMIT_PLAN_SPEC] : tools;
}
