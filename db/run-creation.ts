import type { EntityManager } from 'typeorm';
import type { PromptAttachment } from '../core/run-events';
import type { Run } from './entities/run';
import { appendRunEvent } from './run-events';
import { recordLineage } from './run-lineage';
import { lockRunCreation } from './run-store';

/**
 * Inserts a new run with its prompt and QUEUED entries (the prompt names the run's attachments).
 * Caller holds the run's creation lock.
 */
export async function recordNewRun(
  manager: EntityManager,
  run: Run,
  prompt: { mode: string; attachments?: PromptAttachment[] },
): Promise<void> {
  const attachments = prompt.attachments ?? [];
  await manager.getRepository<Run>('Run').insert(run);
  if (run.parentRunId) await recordLineage(manager, run.runId, run.parentRunId);
  await appendRunEvent(manager, {
    runId: run.runId,
    eventKey: 'prompt',
    kind: 'prompt',
    turn: 1,
    payload: {
      text: run.prompt,
      base_prompt: run.config.base_prompt,
      mode: prompt.mode,
      ...(attachments.length ? { attachments } : {}),
    },
  });
  await appendRunEvent(manager, {
    runId: run.runId,
    eventKey: 'state-t1-QUEUED',
    kind: 'state',
    turn: 1,
    payload: { state: 'QUEUED' },
  });
}

/**
 * Deletes a run whose workflow never picked it up (the start failed, so the caller was told
 * to retry), with the idempotency record that would replay its creation. Returns false, deleting nothing, when the workflow has already started the run:
 * the start reached Temporal after all.
 */
export async function withdrawUnstartedRun(manager: EntityManager, runId: string): Promise<boolean> {
  // The workflow's first activity takes the same lock: it sees the run whole or not at all.
  await lockRunCreation(manager, runId);
  const rows = (await manager.query(
    `SELECT 1 FROM runs WHERE run_id = $1 AND state = 'QUEUED' AND turn = 1 AND started_at IS NULL FOR UPDATE`,
    [runId],
  )) as unknown[];
  if (rows.length === 0) return false;
  await manager.query(`DELETE FROM run_events WHERE run_id = $1`, [runId]);
  await manager.query(`DELETE FROM followups WHERE run_id = $1`, [runId]);
  await manager.query(`DELETE FROM runs WHERE run_id = $1`, [runId]);
  // A retry with the same Idempotency-Key must create the run afresh, not replay a withdrawn one.
  await manager.query(`DELETE FROM idempotency_records WHERE scope = 'create-run' AND response_body->>'run_id' = $1`, [
    runId,
  ]);
  return true;
}
