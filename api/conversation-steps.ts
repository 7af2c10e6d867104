import type { EntityManager } from 'typeorm';
import { maskSecrets, runSecretValues } from '../core/run-secrets';
import type { Run } from '../db/rows/run';
import { loadConversationEvents } from '../db/run-event-reads';
import { conversationSteps, type ConversationStep } from '../services/views/conversation-steps';
import type { SecretsKeyring } from '../core/secrets-keyring';

/** Entries of one run read for its steps; a longer run's later entries are in its transcript download. */
const ENTRIES_PER_RUN = 5000;

/** The `steps` of a conversation whose runs are `runs` (oldest first), the runs' secrets masked. */
export async function loadConversationSteps(
  manager: EntityManager,
  runs: readonly Run[],
  secretsKeyring: SecretsKeyring,
): Promise<ConversationStep[]> {
  const loaded = [];
  for (const run of runs) {
    const events = await loadConversationEvents(manager, run.runId, { afterId: '0', limit: ENTRIES_PER_RUN });
    loaded.push({ runId: run.runId, events: maskSecrets(events, runSecretValues(run.config, secretsKeyring)) });
  }
  return conversationSteps(loaded);
}
