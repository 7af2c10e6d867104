import type { EntityManager } from 'typeorm';
import type { Run } from '../db/rows/run';
import { loadPendingFollowupsPage, type PendingFollowup } from '../db/followup-reads';
import { loadConversationEvents, type StoredRunEvent } from '../db/run-event-reads';
import type { ActionPosition } from './conversation-query';
import { maskSecrets, runSecretValues } from '../core/run-secrets';
import type { SecretsKeyring } from '../core/secrets-keyring';

type Action = Record<string, unknown>;

function eventAction(runId: string, event: StoredRunEvent): Action {
  const p = event.payload;
  const base = { run_id: runId, created_at: event.createdAt.toISOString() };
  switch (event.kind) {
    case 'skill_load':
      return { ...base, kind: 'read_skill', input: p.input, name: p.name };
    case 'tool_call':
      return {
        ...base,
        kind: 'tool_call',
        tool: p.name,
        input: p.input,
        output: p.output,
        is_error: p.is_error,
        exit_code: p.exit_code,
      };
    case 'assistant':
      return { ...base, kind: 'agent_message', text: p.text, tool_calls: p.tool_calls ?? [] };
    case 'prompt':
      return { ...base, kind: 'user_message', text: p.text };
    case 'followup':
      return { ...base, kind: 'user_message', text: p.message, followup: true };
    case 'files_changed':
      return { ...base, kind: 'files_changed', files: p.files };
    default:
      throw new Error(`loadConversationEvents returned a ${event.kind} entry, which is no action`);
  }
}

function pendingAction(runId: string, followup: PendingFollowup): Action {
  return {
    run_id: runId,
    created_at: followup.createdAt.toISOString(),
    kind: 'user_message',
    text: followup.message,
    followup: true,
    pending: true,
  };
}

/**
 * Up to `limit` actions of a conversation after `after`, in order: each run's events, then its
 * pending follow-ups. Reads at most `limit + 1` actions, run by run; `next` is where the following
 * page starts, when there is one.
 */
export async function loadConversationActions(
  manager: EntityManager,
  runs: readonly Run[],
  secretsKeyring: SecretsKeyring,
  page: { after?: ActionPosition; limit: number },
): Promise<{ actions: Action[]; next?: ActionPosition }> {
  const wanted = page.limit + 1;
  const found: { action: Action; position: ActionPosition }[] = [];
  const first = page.after ? runs.findIndex((r) => r.runId === page.after!.runId) : 0;
  for (let index = Math.max(first, 0); index < runs.length && found.length < wanted; index++) {
    const run = runs[index]!;
    const from = index === first ? page.after : undefined;
    const secrets = runSecretValues(run.config, secretsKeyring);
    let afterSeq = from && 'afterSeq' in from ? from.afterSeq : undefined;
    if (afterSeq === undefined) {
      const limit = wanted - found.length;
      const afterId = from && 'afterEventId' in from ? from.afterEventId : '0';
      const events = await loadConversationEvents(manager, run.runId, { afterId, limit });
      for (const event of maskSecrets(events, secrets)) {
        found.push({ action: eventAction(run.runId, event), position: { runId: run.runId, afterEventId: event.id } });
      }
      if (events.length === limit) break;
      afterSeq = 0;
    }
    // Recorded, not yet seen by the agent: delivered when the run next steps or continues.
    const pending = await loadPendingFollowupsPage(manager, run.runId, { afterSeq, limit: wanted - found.length });
    for (const followup of maskSecrets(pending, secrets)) {
      found.push({
        action: pendingAction(run.runId, followup),
        position: { runId: run.runId, afterSeq: followup.seq },
      });
    }
  }
  const shown = found.slice(0, page.limit);
  return {
    actions: shown.map((f) => f.action),
    next: found.length > page.limit ? shown[shown.length - 1]?.position : undefined,
  };
}
