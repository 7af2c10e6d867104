import { existsSync } from 'node:fs';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Logger } from '../core/logger';
import type { RunEventPayloads } from '../core/run-events';
import { turnIsOver } from '../core/run-state';
import { hasRunEvent, recordedEventKeys } from '../db/run-event-reads';
import { latestMessageMode } from '../db/followup-reads';
import { recordPlan } from '../db/plans';
import { deliverFollowups, lockRunForStep } from '../db/run-store';
import { loadStepRun, type StepRun } from '../db/run-step-reads';
import { RunFailureType, type AgentStepOutcome } from '../workflows/run-contract';
import { createCallModel } from './agent-step/call-model';
import { createRecordHandoff } from './agent-step/handoff-patch';
import { createRunToolCalls } from './agent-step/run-tool-calls';
import { messageMode, planFromAnswer, type MessageMode } from './agent-step/plan-mode';
import { assistantEventKey } from './agent-step/tool-call-keys';
import type { ActivityDeps } from './deps';
import { withHeartbeat } from './heartbeat';
import { withStepAttempt } from './agent-step/step-attempt';
import { createHarnessStep } from './harness/harness-step';
import { isCliHarness } from '../core/harnesses';
import { loadStepConversation, type StepConversation } from './step-conversation';
import { userFailure } from './user-failure';
import { workspaceDir } from './workspace/workspace-paths';

export { conversationFromEvents } from './agent-step/conversation-from-events';
export { PLAN_APPROVED_NOTE, PLAN_MODE_NOTE } from './agent-step/plan-mode';
export { INTERRUPTED_TOOL_CALL } from './agent-step/run-tool-calls';
export { systemPrompt, type FactoryColleague } from './agent-step/system-prompt';
export { toolCallKeys } from './agent-step/tool-call-keys';

/**
 * One step of the agent loop, on the worker that holds the workspace: deliver follow-ups, call
 * the model with the conversation and the tools, run the tool calls it asks for, record what
 * changed. Every write is keyed, so a retried step redoes at most the tool call in flight. A run
 * worked by a CLI harness takes its step from the harness instead: one invocation of the CLI.
 */
export function createAgentStepActivities(deps: ActivityDeps) {
  const { dataSource, config, logger } = deps;
  const callModel = createCallModel(deps);
  const recordHandoff = createRecordHandoff(deps);
  const runToolCalls = createRunToolCalls(deps);
  const runHarnessStep = createHarnessStep(deps);

  /** The workspace of the run, which must be on this worker. */
  function workspaceHere(runId: string): string {
    const workspace = workspaceDir(config.workspace.dir, runId);
    if (!existsSync(workspace)) {
      throw ApplicationFailure.nonRetryable(
        `The workspace of run ${runId} is not on this worker`,
        RunFailureType.WORKSPACE_LOST,
      );
    }
    return workspace;
  }

  /** A step of this service's own loop: the turn's follow-ups, the model's reply, its tool calls. */
  async function runModelStep(at: StepAt): Promise<AgentStepOutcome> {
    const { runId, turn, step, run, workspace, ctx, log } = at;
    const assistantKey = assistantEventKey(turn, step);
    if (!(await openTurn(at, assistantKey))) return { done: true, turnEnded: true };
    // After the delivery: a follow-up just delivered sets the mode.
    const mode = messageMode(await latestMessageMode(dataSource.manager, runId));
    // A summary is written before its step's reply and never takes in the last exchange: this
    // step's reply, what followed it and the latest entry are always among those loaded.
    const conversation = await loadStepConversation(dataSource.manager, runId);
    const reply = await stepReply(at, conversation, assistantKey, mode);
    const calls = reply?.assistant.tool_calls ?? [];
    if (!reply || calls.length === 0) {
      if (reply && mode === 'plan') await answerAsPlan(at, assistantKey, reply.assistant.text);
      await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
      return { done: true };
    }
    const { events } = conversation;
    const outcome = await runToolCalls({
      runId,
      turn,
      step,
      run,
      events,
      assistantKey,
      replyIsNew: reply.isNew,
      calls,
      workspace,
      ctx,
      mode,
    });
    // A plan submitted ends the turn.
    if (outcome.done) await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
    return outcome;
  }

  /** A turn in plan mode that ends without submit_plan: its final answer is the plan's next version. */
  async function answerAsPlan({ runId, turn }: StepAt, assistantKey: string, text: string | undefined) {
    const plan = planFromAnswer(text ?? '');
    if (plan) await recordPlan(dataSource.manager, { runId, turn, sourceKey: assistantKey, ...plan });
  }

  /** Whether the step's turn is still open, its follow-ups delivered to the conversation. */
  async function openTurn({ runId, turn, run }: StepAt, assistantKey: string): Promise<boolean> {
    // With nothing to deliver, the row just read decides, as its lock would: a follow-up sent
    // meanwhile waits for the next step either way.
    if (run.pending_followups === 0) return !turnIsOver(run, turn);
    return dataSource.transaction(async (tx) => {
      if (!(await lockRunForStep(tx, runId, turn))) return false;
      // A retried step whose model call is recorded finishes its tool calls first: a follow-up
      // may not land between the model's tool calls and their results.
      if (!(await hasRunEvent(tx, runId, assistantKey))) await deliverFollowups(tx, runId, turn);
      return true;
    });
  }

  /**
   * The step's reply: the one an earlier attempt recorded, or the model's now, within the turn's
   * limits; none when there is nothing new to answer (a follow-up already answered by a retried step).
   */
  async function stepReply(
    at: StepAt,
    conversation: StepConversation,
    assistantKey: string,
    mode: MessageMode,
  ): Promise<{ assistant: RunEventPayloads['assistant']; isNew: boolean } | undefined> {
    const { events } = conversation;
    const recorded = events.find((e) => e.eventKey === assistantKey)?.payload as
      RunEventPayloads['assistant'] | undefined;
    if (recorded) return { assistant: recorded, isNew: false };
    const last = events[events.length - 1];
    if (last?.kind === 'assistant' && !(last.payload.tool_calls as unknown[] | undefined)?.length) return undefined;
    await assertWithinTurnLimits(at, conversation);
    const { runId, turn, step, run, ctx, log } = at;
    const made = await callModel(log, runId, turn, step, run, conversation, ctx, mode);
    log.debug('model replied', {
      model_id: made.reply.model_id,
      total_tokens: made.reply.total_tokens,
      finish_reason: made.reply.finish_reason,
      tool_calls: made.reply.tool_calls?.length ?? 0,
    });
    return { assistant: made.reply, isNew: made.recorded };
  }

  /** The turn's steps and the run's tokens within their limits, or the run fails (its handoff recorded first). */
  async function assertWithinTurnLimits(at: StepAt, conversation: StepConversation): Promise<void> {
    const { runId, turn, step, run, workspace, ctx, log } = at;
    // The worker's limits are ceilings too (an operator may have lowered them since).
    const maxSteps = Math.min(run.config.max_steps ?? config.agent.maxSteps, config.agent.maxSteps);
    const maxTokens = Math.min(run.config.max_tokens ?? config.agent.maxTokens, config.agent.maxTokens);
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
      : conversation.events.filter((e) => e.kind === 'assistant' && e.turn === turn).length;
    if (stepsSoFar >= maxSteps) {
      await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
      throw userFailure(
        `The agent reached its step limit of ${maxSteps} model calls in this turn without finishing (raise config.max_steps or AGENT_MAX_STEPS).`,
        'invalid_request',
      );
    }
    if (Number(run.total_tokens) >= maxTokens) {
      await recordHandoff(log, runId, turn, workspace, ctx.cancellationSignal);
      throw userFailure(
        `The agent reached its token limit of ${maxTokens} tokens without finishing (raise config.max_tokens or AGENT_MAX_TOKENS).`,
        'invalid_request',
      );
    }
  }

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
        const workspace = workspaceHere(runId);
        const run = (await loadStepRun(dataSource.manager, runId))!;
        const harness = run.config.harness?.type;
        if (isCliHarness(harness)) {
          return withDelivery(
            run,
            await runHarnessStep({ runId, turn, step, run, type: harness, workspace, ctx, log }),
          );
        }
        const at = { runId, turn, step, run, workspace, ctx, log };
        const outcome = await withStepAttempt(dataSource, { runId, turn, step }, () => runModelStep(at));
        return withDelivery(run, outcome);
      });
    },
  };
}

/** A step that ends its turn says so when the run delivers pull requests: the workflow then delivers them. */
function withDelivery(run: StepRun, outcome: AgentStepOutcome): AgentStepOutcome {
  const deliver = outcome.done && !outcome.turnEnded && !!run.config.delivery?.pull_request;
  return deliver ? { ...outcome, deliver } : outcome;
}

/** Where a step stands: its run, turn and step, the run's workspace, its activity context and log. */
interface StepAt {
  runId: string;
  turn: number;
  step: number;
  run: StepRun;
  workspace: string;
  ctx: Context;
  log: Logger;
}
