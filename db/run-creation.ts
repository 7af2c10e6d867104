import type { EntityManager } from 'typeorm';
import type { PromptAttachment, RunEventPayloads } from '../core/run-events';
import type { Run } from './rows/run';
import { lockRunCreation } from './run-store';

/**
 * Inserts a new run with its lineage and its prompt and QUEUED entries (the prompt names the
 * run's attachments), in one statement: creating a run is the API's busiest write. Caller holds
 * the run's creation lock.
 */
export async function recordNewRun(
  manager: EntityManager,
  run: Run,
  prompt: { mode: string; attachments?: PromptAttachment[] },
  /** False when the run's workflow is being started beside this insert: not listed until it is known to exist. */
  workflowStarted = true,
  /**
   * A fork's conversation so far: the source's transcript up to `throughEventId`, as turn 0 before
   * the prompt (its state entries stay the source's: they would announce the source's ends again).
   */
  history?: { sourceRunId: string; throughEventId: string },
): Promise<void> {
  const attachments = prompt.attachments ?? [];
  const promptPayload: RunEventPayloads['prompt'] = {
    text: run.prompt,
    base_prompt: run.config.base_prompt,
    mode: prompt.mode,
    ...(attachments.length ? { attachments } : {}),
  };
  const queuedPayload: RunEventPayloads['state'] = { state: 'QUEUED' };
  // Foreign keys and the run_events triggers run at the end of the statement, when the run exists.
  await manager.query(
    `WITH run AS (
       INSERT INTO runs (run_id, team_id, creator_uid, creator_type, creator_display_name, executor_uid,
         executor_display_name, title, prompt, state, turn, config, name, model_id, environment_id, skill_spec,
         source, schedule, metadata, conversation_id, parent_run_id, factory_uid, dispatch_key, session_id,
         total_tokens, created_at, updated_at, workflow_started, root_run_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16, $17, $18::jsonb,
         $19::jsonb, $20, $21::uuid, $22, $23, $24, 0, $25, $25, $28,
         COALESCE((SELECT p.root_run_id FROM runs p WHERE p.run_id = $21::uuid), $21::uuid, $1::uuid))
     ), lineage AS (
       INSERT INTO run_lineage (ancestor_run_id, run_id, depth)
       SELECT $21::uuid, $1::uuid, 1 WHERE $21::uuid IS NOT NULL
       UNION ALL
       SELECT ancestor_run_id, $1::uuid, depth + 1 FROM run_lineage WHERE run_id = $21::uuid
     )
     INSERT INTO run_events (run_id, event_key, kind, turn, payload)
     SELECT $1, event_key, kind, turn, payload FROM (
       SELECT 0 AS part, id AS position, 'fork-' || event_key AS event_key, kind, 0 AS turn, payload
       FROM run_events WHERE run_id = $29::uuid AND id <= $30::bigint AND kind <> 'state'
       UNION ALL
       VALUES (1, 0, 'prompt', 'prompt', 1, $26::jsonb), (1, 1, 'state-t1-QUEUED', 'state', 1, $27::jsonb)
     ) e ORDER BY part, position`,
    [
      run.runId,
      run.teamId,
      run.creatorUid,
      run.creatorType,
      run.creatorDisplayName,
      run.executorUid,
      run.executorDisplayName,
      run.title,
      run.prompt,
      run.state,
      run.turn,
      JSON.stringify(run.config),
      run.name,
      run.modelId,
      run.environmentId,
      run.skillSpec,
      run.source,
      run.schedule ? JSON.stringify(run.schedule) : null,
      JSON.stringify(run.metadata),
      run.conversationId,
      run.parentRunId,
      run.factoryUid ?? null,
      run.dispatchKey ?? null,
      run.sessionId,
      run.createdAt,
      JSON.stringify(promptPayload),
      JSON.stringify(queuedPayload),
      workflowStarted,
      history?.sourceRunId ?? null,
      history?.throughEventId ?? null,
    ],
  );
}

/** The run's workflow is known to exist (its start answered, or its first activity ran): the run is listed. */
export async function markWorkflowStarted(manager: EntityManager, runId: string): Promise<void> {
  await manager.query(`UPDATE runs SET workflow_started = true WHERE run_id = $1 AND NOT workflow_started`, [runId]);
}

/** Whether the run exists and its workflow is not known to have started (a create cut off before its start). */
export async function isAwaitingWorkflowStart(manager: EntityManager, runId: string): Promise<boolean> {
  const rows = (await manager.query(`SELECT 1 FROM runs WHERE run_id = $1 AND NOT workflow_started`, [
    runId,
  ])) as unknown[];
  return rows.length > 0;
}

/**
 * Deletes a run whose workflow never picked it up (the start failed, so the caller was told
 * to retry), with the idempotency record that would replay its creation and the factory task
 * made with it. Returns false, deleting nothing, when the workflow has already started the run:
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
  // The task a dispatch for a ticket opened with it, when the run was its conversation's only one.
  await manager.query(
    `DELETE FROM factory_tasks t USING runs r
      WHERE r.run_id = $1 AND t.conversation_id = r.conversation_id::uuid AND t.deleted_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.conversation_id = r.conversation_id AND o.run_id <> r.run_id)`,
    [runId],
  );
  await manager.query(`DELETE FROM run_events WHERE run_id = $1`, [runId]);
  await manager.query(`DELETE FROM followups WHERE run_id = $1`, [runId]);
  await manager.query(`DELETE FROM runs WHERE run_id = $1`, [runId]);
  // A retry with the same Idempotency-Key must create the run afresh, not replay a withdrawn one.
  await manager.query(
    `DELETE FROM idempotency_records WHERE scope IN ('create-run', 'dispatch-agent') AND response_body->>'run_id' = $1`,
    [runId],
  );
  return true;
}
