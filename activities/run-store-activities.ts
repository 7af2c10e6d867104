import { ApplicationFailure } from '@temporalio/activity';
import type { RunState } from '../core/run-state';
import { isTerminal } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import { appendRunEvent } from '../db/run-events';
import { applyCancellation, applyTransition, lockRun, lockRunCreation, reopenRun } from '../db/run-store';
import { RunFailureType } from '../workflows/run-contract';
import type { ActivityDeps } from './deps';

/** Activities that write the run's state and follow-ups to PostgreSQL, each idempotent. */
export function createRunStoreActivities({ dataSource }: ActivityDeps) {
  return {
    /**
     * Finds the turn this execution should work on: the current one when the run is queued or
     * in progress, a new one when it ended and follow-ups wait, or null when there is nothing to do.
     */
    async beginTurn({ runId }: { runId: string }): Promise<{ turn: number | null }> {
      return dataSource.transaction(async (tx) => {
        // Waits for the API's transaction that created the run or recorded a follow-up.
        await lockRunCreation(tx, runId);
        const run = await lockRun(tx, runId);
        if (!run) {
          throw ApplicationFailure.nonRetryable(`Run ${runId} does not exist`, RunFailureType.RUN_NOT_FOUND);
        }
        if (!isTerminal(run.state)) return { turn: run.turn };
        if (run.pendingFollowups === 0) return { turn: null };
        return { turn: await reopenRun(tx, runId, run.turn) };
      });
    },

    async loadIdleTimeout({ runId }: { runId: string }): Promise<{ idleTimeoutMinutes: number }> {
      const rows = (await dataSource.query(
        `SELECT config->'idle_timeout_minutes' AS idle FROM runs WHERE run_id = $1`,
        [runId],
      )) as { idle: number | null }[];
      return { idleTimeoutMinutes: rows[0]?.idle ?? 0 };
    },

    async recordTransition(input: {
      runId: string;
      turn: number;
      state: RunState;
      statusMessage?: RunStatusMessage;
    }): Promise<{ applied: boolean }> {
      return { applied: await dataSource.transaction((tx) => applyTransition(tx, input)) };
    },

    async recordCancelled({ runId }: { runId: string }): Promise<{ applied: boolean }> {
      return { applied: await dataSource.transaction((tx) => applyCancellation(tx, runId)) };
    },

    /** Appends every recorded, undelivered follow-up to the conversation, in order. */
    async deliverFollowups({ runId, turn }: { runId: string; turn: number }): Promise<{ delivered: number }> {
      return dataSource.transaction(async (tx) => {
        await lockRun(tx, runId);
        const followups = (await tx.query(
          `SELECT id, seq, message, mode FROM followups WHERE run_id = $1 AND delivered_at IS NULL ORDER BY seq`,
          [runId],
        )) as { id: string; seq: number; message: string; mode: string }[];
        for (const f of followups) {
          await appendRunEvent(tx, {
            runId,
            eventKey: `followup-${f.id}`,
            kind: 'followup',
            turn,
            payload: { followup_id: f.id, seq: f.seq, message: f.message, mode: f.mode },
          });
        }
        if (followups.length > 0) {
          await tx.query(`UPDATE followups SET delivered_at = clock_timestamp() WHERE id = ANY($1::uuid[])`, [
            followups.map((f) => f.id),
          ]);
        }
        return { delivered: followups.length };
      });
    },
  };
}
