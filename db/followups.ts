import type { EntityManager } from 'typeorm';
import { newUuidV7 } from '../core/ids';
import { isAllowedMove, type RunState } from '../core/run-state';
import { lockRun, reopenRun } from './run-store';

/** What a follow-up changed on its run, so that it can be taken back if it is never delivered. */
export interface RecordedFollowup {
  id: string;
  seq: number;
  /** The run as it was before the follow-up reopened it; null when it did not. */
  reopenedFrom: { turn: number; row: Record<string, unknown> } | null;
  state: RunState;
}

const RESTORED_COLUMNS = [
  'state',
  'status_message',
  'ended_at',
  'cancel_requested_at',
  'cancel_requested_by',
  'cancel_followup_seq',
  'updated_at',
] as const;

/**
 * Records a follow-up (next sequence number) and reopens the run in a new turn when it had
 * ended. Caller holds the row lock (`lockRun`), whose state it passes.
 */
export async function recordFollowup(
  manager: EntityManager,
  input: {
    runId: string;
    message: string;
    mode: string;
    creatorUid: string;
    locked: { state: RunState; turn: number };
  },
  reopen: boolean,
): Promise<RecordedFollowup> {
  const [{ seq }] = (await manager.query(`SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM followups WHERE run_id = $1`, [
    input.runId,
  ])) as [{ seq: number }];
  const id = newUuidV7();
  await manager.query(
    `INSERT INTO followups (id, run_id, seq, message, mode, creator_uid, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp())`,
    [id, input.runId, seq, input.message, input.mode, input.creatorUid],
  );
  if (!reopen) return { id, seq, reopenedFrom: null, state: input.locked.state };
  const [row] = (await manager.query(`SELECT ${RESTORED_COLUMNS.join(', ')} FROM runs WHERE run_id = $1`, [
    input.runId,
  ])) as Record<string, unknown>[];
  await reopenRun(manager, input.runId, input.locked.turn);
  return { id, seq, reopenedFrom: { turn: input.locked.turn, row: row! }, state: 'QUEUED' };
}

/**
 * Takes back a follow-up nobody has delivered (its signal never reached the workflow) and,
 * when it alone reopened the run, puts the run back as it was. Returns false, changing
 * nothing, when the follow-up was delivered already: the run has it.
 */
export async function withdrawFollowup(
  manager: EntityManager,
  runId: string,
  followup: RecordedFollowup,
): Promise<boolean> {
  const locked = await lockRun(manager, runId);
  // TypeORM answers a DELETE with [rows, count].
  const [, deleted] = (await manager.query(`DELETE FROM followups WHERE id = $1 AND delivered_at IS NULL`, [
    followup.id,
  ])) as [unknown[], number];
  if (deleted === 0) return false;
  const reopened = followup.reopenedFrom;
  if (
    reopened &&
    locked &&
    isAllowedMove(locked.state, reopened.row.state as RunState, 'withdraw') &&
    locked.turn === reopened.turn + 1 &&
    locked.pendingFollowups === 1
  ) {
    const values = RESTORED_COLUMNS.map((c) => reopened.row[c]);
    await manager.query(
      `UPDATE runs SET turn = $2, ${RESTORED_COLUMNS.map((c, i) => `${c} = $${i + 3}`).join(', ')}
        WHERE run_id = $1`,
      [
        runId,
        reopened.turn,
        ...values.map((v) => (v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v)),
      ],
    );
    await manager.query(`DELETE FROM run_events WHERE run_id = $1 AND turn = $2`, [runId, reopened.turn + 1]);
  }
  return true;
}
