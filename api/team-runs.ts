import type { EntityManager } from 'typeorm';
import { notFound } from '../core/api-error';
import { isUuid } from '../core/ids';
import type { Run } from '../db/rows/run';
import { findRun, listConversationRuns } from '../db/run-reads';

/** The caller's team's run `runId`; 404 for any other (another team's, or no run). */
export async function teamRunOr404(manager: EntityManager, runId: string, teamId: string): Promise<Run> {
  const run = isUuid(runId) ? await findRun(manager, runId, teamId) : null;
  if (!run) throw notFound(`No run ${runId}.`);
  return run;
}

/** The runs of a conversation of the caller's team, oldest first (never none); 404 for any other. */
export async function teamConversationRunsOr404(
  manager: EntityManager,
  conversationId: string,
  teamId: string,
): Promise<Run[]> {
  const runs = isUuid(conversationId) ? await listConversationRuns(manager, conversationId, teamId) : [];
  if (runs.length === 0) throw notFound(`No conversation ${conversationId}.`);
  return runs.map((c) => c.run);
}
