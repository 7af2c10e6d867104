import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ResolvedAgentConfig } from '../core/run-types';
import { appendRunEvent, loadRunEvents } from '../db/run-events';
import { deliverFollowups, lockRun } from '../db/run-store';
import { RunFailureType, type UserFailureDetails } from '../workflows/run-contract';
import type { ActivityDeps } from './deps';
import { ProviderNotConfiguredError, ProviderRejectedError, resolveProvider, type ChatMessage } from './model-provider';

function userFailure(message: string, errorCode: UserFailureDetails['errorCode']): ApplicationFailure {
  const details: UserFailureDetails = { errorCode };
  return ApplicationFailure.nonRetryable(message, RunFailureType.USER_FAILURE, details);
}

/** Builds the model's view of the conversation from the transcript. */
export function conversationMessages(
  basePrompt: string | undefined,
  events: { kind: string; payload: Record<string, unknown> }[],
): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (basePrompt) messages.push({ role: 'system', content: basePrompt });
  for (const e of events) {
    if (e.kind === 'prompt') messages.push({ role: 'user', content: String(e.payload.text) });
    else if (e.kind === 'followup') messages.push({ role: 'user', content: String(e.payload.message) });
    else if (e.kind === 'assistant') messages.push({ role: 'assistant', content: String(e.payload.text) });
  }
  return messages;
}

/**
 * The agent's work: one model call per step. A step first appends the follow-ups recorded so far
 * to the conversation, then stores the reply once in the transcript.
 */
export function createAgentActivities({ dataSource, config }: ActivityDeps) {
  return {
    async runAgentStep({
      runId,
      turn,
      step,
    }: {
      runId: string;
      turn: number;
      step: number;
    }): Promise<{ totalTokens: number }> {
      const eventKey = `assistant-t${turn}-s${step}`;
      const [run] = (await dataSource.query(`SELECT config FROM runs WHERE run_id = $1`, [runId])) as {
        config: ResolvedAgentConfig;
      }[];
      await dataSource.transaction(async (tx) => {
        await lockRun(tx, runId);
        await deliverFollowups(tx, runId, turn);
      });
      const events = await loadRunEvents(dataSource.manager, runId, ['prompt', 'followup', 'assistant']);
      const done = events.find((e) => e.eventKey === eventKey);
      if (done) return { totalTokens: Number(done.payload.total_tokens ?? 0) };
      // A follow-up already answered by a retried earlier step leaves nothing new to reply to.
      if (events[events.length - 1]?.kind === 'assistant') return { totalTokens: 0 };

      const modelId = run!.config.model_id;
      let resolved;
      try {
        resolved = resolveProvider(config, modelId);
      } catch (err) {
        if (err instanceof ProviderNotConfiguredError) throw userFailure(err.message, 'feature_not_available');
        throw err;
      }

      const ctx = Context.current();
      const heartbeat = setInterval(() => ctx.heartbeat({ step }), 1000);
      let reply;
      try {
        reply = await resolved.provider.complete(
          resolved.model,
          conversationMessages(run!.config.base_prompt, events),
          ctx.cancellationSignal,
        );
      } catch (err) {
        if (err instanceof ProviderRejectedError) {
          const code = err.status === 401 || err.status === 403 ? 'feature_not_available' : 'invalid_request';
          throw userFailure(`The model provider rejected the request (HTTP ${err.status}): ${err.message}`, code);
        }
        throw err;
      } finally {
        clearInterval(heartbeat);
      }

      const totalTokens = reply.totalTokens ?? 0;
      await dataSource.transaction(async (tx) => {
        const wrote = await appendRunEvent(tx, {
          runId,
          eventKey,
          kind: 'assistant',
          turn,
          payload: {
            text: reply.text,
            model_id: modelId,
            total_tokens: totalTokens,
            finish_reason: reply.finishReason,
          },
        });
        if (wrote && totalTokens > 0) {
          await tx.query(`UPDATE runs SET total_tokens = total_tokens + $2 WHERE run_id = $1`, [runId, totalTokens]);
        }
      });
      return { totalTokens };
    },
  };
}
