import type { EntityManager } from 'typeorm';
import { type HarnessState, toState } from './harness-state-reads';

/** A prompt or follow-up of the run the CLI has not been given yet. */
export interface PendingMessage {
  id: string;
  kind: 'prompt' | 'followup';
  payload: Record<string, unknown>;
}

/**
 * Starts invocation `step` of the run's CLI: takes the prompt and follow-ups recorded since the
 * last invocation (each is handed over exactly once) and marks the step started, counting its
 * attempts. The caller holds the run's lock, in the transaction that delivered the follow-ups.
 * The returned state is the one before this claim, with the new `stepAttempt`.
 */
export async function claimHarnessInvocation(
  manager: EntityManager,
  runId: string,
  harness: string,
  step: string,
): Promise<{ state: HarnessState; pending: PendingMessage[] }> {
  await manager.query(
    `INSERT INTO run_harness_state (run_id, harness) VALUES ($1, $2) ON CONFLICT (run_id) DO NOTHING`,
    [runId, harness],
  );
  const [row] = (await manager.query(`SELECT * FROM run_harness_state WHERE run_id = $1 FOR UPDATE`, [
    runId,
  ])) as Record<string, unknown>[];
  const state = toState(row!);
  const pending = (await manager.query(
    `SELECT id::text AS id, kind, payload FROM run_events
      WHERE run_id = $1 AND kind IN ('prompt', 'followup') AND id > $2::bigint ORDER BY id`,
    [runId, state.promptedThrough],
  )) as PendingMessage[];
  const through = pending.length ? pending[pending.length - 1]!.id : state.promptedThrough;
  const stepAttempt = state.startedStep === step ? state.stepAttempt + 1 : 1;
  await manager.query(
    `UPDATE run_harness_state SET prompted_through = $2::bigint, started_step = $3, step_attempt = $4 WHERE run_id = $1`,
    [runId, through, step, stepAttempt],
  );
  return { state: { ...state, promptedThrough: through, stepAttempt }, pending };
}

/** The session the run's CLI reported: its own from now on, whatever it resumed. */
export async function recordHarnessSession(manager: EntityManager, runId: string, sessionId: string): Promise<void> {
  await manager.query(`UPDATE run_harness_state SET session_id = $2, session_inherited = false WHERE run_id = $1`, [
    runId,
    sessionId,
  ]);
}

/**
 * A fork's CLI continues its source's session as of `checkpointId` (whose home holds its files):
 * its first invocation resumes it and is handed only what follows the copied conversation (the
 * source's CLI had been handed all of that). Nothing when the checkpoint names no session. In the
 * fork's creation transaction, after its copy of the conversation.
 */
export async function inheritHarnessSession(
  tx: EntityManager,
  fork: { runId: string; harness: string; checkpointId: string },
): Promise<void> {
  await tx.query(
    `INSERT INTO run_harness_state (run_id, harness, session_id, session_inherited, prompted_through)
     SELECT $1, $2, c.harness_session_id, true,
            (SELECT COALESCE(max(id), 0) FROM run_events WHERE run_id = $1 AND turn = 0)
     FROM checkpoints c WHERE c.checkpoint_id = $3 AND c.harness_session_id IS NOT NULL`,
    [fork.runId, fork.harness, fork.checkpointId],
  );
}

export async function recordHarnessStepFinished(manager: EntityManager, runId: string, step: string): Promise<void> {
  await manager.query(`UPDATE run_harness_state SET finished_step = $2 WHERE run_id = $1`, [runId, step]);
}

/**
 * Adds one invocation's usage, as the CLI reported it, to the run's cumulative snapshot: counters
 * summed by name, tool calls by tool, cost when reported; the capture sequence counts snapshots.
 * Once per invocation: `invocation` (its transcript key, `t<turn>-s<step>-i<attempt>`) is
 * remembered, and adding it again changes nothing.
 */
export async function addHarnessUsage(
  manager: EntityManager,
  runId: string,
  added: {
    invocation: string;
    usage: Record<string, number>;
    toolCalls: Record<string, number>;
    costUsd?: number;
    executionId: number;
  },
): Promise<void> {
  await manager.query(
    `UPDATE run_harness_state SET
       usage = (SELECT COALESCE(jsonb_object_agg(k, v), '{}'::jsonb) FROM (
                  SELECT k, sum(v::numeric) AS v FROM (
                    SELECT key AS k, value AS v FROM jsonb_each_text(COALESCE(usage, '{}'::jsonb))
                    UNION ALL SELECT key, value FROM jsonb_each_text($2::jsonb)) a GROUP BY k) s),
       tool_calls = (SELECT COALESCE(jsonb_object_agg(k, v), '{}'::jsonb) FROM (
                  SELECT k, sum(v::numeric) AS v FROM (
                    SELECT key AS k, value AS v FROM jsonb_each_text(COALESCE(tool_calls, '{}'::jsonb))
                    UNION ALL SELECT key, value FROM jsonb_each_text($3::jsonb)) a GROUP BY k) s),
       cost_usd = CASE WHEN $4::numeric IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + $4::numeric END,
       capture_sequence = capture_sequence + 1,
       execution_id = $5,
       captured_at = clock_timestamp(),
       usage_counted = array_append(usage_counted, $6)
     WHERE run_id = $1 AND NOT ($6 = ANY (usage_counted))`,
    [
      runId,
      JSON.stringify(added.usage),
      JSON.stringify(added.toolCalls),
      added.costUsd ?? null,
      added.executionId,
      added.invocation,
    ],
  );
}
