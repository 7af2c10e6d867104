import type { EntityManager } from 'typeorm';
import { storableJson } from './storable';
import { isAllowedMove, RUN_STATES, stateRank, turnIsOver, type RunState } from '../core/run-state';
import type { RunStatusMessage } from '../core/run-types';
import { latestMessageMode } from './followup-reads';
import { appendRunEvent } from './run-events';

/** SQL rank of a state within a turn, built from `stateRank` (core/run-state.ts): the order is written once. */
const RANK = (col: string) =>
  `(CASE ${col} ${RUN_STATES.map((s) => `WHEN '${s}' THEN ${stateRank(s)}`).join(' ')} END)`;
/** The states a run may be cancelled from (a forward move to CANCELLED). */
const CANCELLABLE = RUN_STATES.filter((s) => isAllowedMove(s, 'CANCELLED', 'forward'));
/** The states a run may be reopened from by a follow-up. */
const REOPENABLE = RUN_STATES.filter((s) => isAllowedMove(s, 'QUEUED', 'reopen'));
/** The states a run may move forward to within its turn. */
const FORWARD_TARGETS = RUN_STATES.filter((to) => RUN_STATES.some((from) => isAllowedMove(from, to, 'forward')));
/** The states a call of the agent may block a run from, and those it is unblocked from. */
const BLOCKABLE = RUN_STATES.filter((s) => isAllowedMove(s, 'BLOCKED', 'block'));
const UNBLOCKABLE = RUN_STATES.filter((s) => isAllowedMove(s, 'INPROGRESS', 'unblock'));
const sqlList = (states: readonly string[]) => states.map((s) => `'${s}'`).join(', ');
const BUMP_UPDATED_AT = `updated_at = GREATEST(clock_timestamp(), updated_at + interval '1 millisecond')`;

/** Serialises writers of one run; also taken by the API around creating a run and its workflow. */
export async function lockRunCreation(manager: EntityManager, runId: string): Promise<void> {
  await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [runId]);
}

export interface LockedRun {
  state: RunState;
  turn: number;
  pendingFollowups: number;
  idleTimeoutMinutes: number;
}

/** Locks the run row for the rest of the transaction; null when it does not exist. */
export async function lockRun(manager: EntityManager, runId: string): Promise<LockedRun | null> {
  const rows = (await manager.query(
    `SELECT state, turn, COALESCE((config->>'idle_timeout_minutes')::int, 0) AS idle,
            (SELECT count(*)::int FROM followups f WHERE f.run_id = r.run_id AND f.delivered_at IS NULL) AS pending
       FROM runs r WHERE run_id = $1 FOR UPDATE`,
    [runId],
  )) as { state: RunState; turn: number; pending: number; idle: number }[];
  const row = rows[0];
  return row ? { state: row.state, turn: row.turn, pendingFollowups: row.pending, idleTimeoutMinutes: row.idle } : null;
}

/**
 * Locks the run for a step of `turn`; false when the stored run has moved past that turn (see
 * `turnIsOver`), and the step must not run. Caller is in a transaction.
 */
export async function lockRunForStep(manager: EntityManager, runId: string, turn: number): Promise<boolean> {
  const locked = await lockRun(manager, runId);
  return locked !== null && !turnIsOver(locked, turn);
}

/** Moves a run in a terminal state back to QUEUED in a new turn (queued for a slot anew). Caller holds the row lock. */
export async function reopenRun(manager: EntityManager, runId: string, currentTurn: number): Promise<number> {
  const turn = currentTurn + 1;
  const [, reopened] = (await manager.query(
    `UPDATE runs SET state = 'QUEUED', turn = $2, status_message = NULL, ended_at = NULL, queued_at = clock_timestamp(),
            cancel_requested_at = NULL, cancel_requested_by = NULL, cancel_followup_seq = NULL, ${BUMP_UPDATED_AT}
      WHERE run_id = $1 AND turn = $3 AND state IN (${sqlList(REOPENABLE)})`,
    [runId, turn, currentTurn],
  )) as [unknown[], number];
  if (reopened !== 1) throw new Error(`run ${runId} is not in a state a follow-up reopens (turn ${currentTurn})`);
  await appendRunEvent(manager, {
    runId,
    eventKey: `state-t${turn}-QUEUED`,
    kind: 'state',
    turn,
    payload: { state: 'QUEUED' },
  });
  return turn;
}

/** How long the turn has been QUEUED, by the database's clock (its QUEUED entry); 0 without one. */
export async function secondsQueued(manager: EntityManager, runId: string, turn: number): Promise<number> {
  const rows = (await manager.query(
    `SELECT extract(epoch FROM clock_timestamp() - created_at)::float8 AS seconds
       FROM run_events WHERE run_id = $1 AND event_key = $2`,
    [runId, `state-t${turn}-QUEUED`],
  )) as { seconds: number }[];
  return Math.max(0, rows[0]?.seconds ?? 0);
}

/** Moves a run forward within its turn; a stale or repeated write changes nothing. */
export async function applyTransition(
  manager: EntityManager,
  input: { runId: string; turn: number; state: RunState; statusMessage?: RunStatusMessage },
): Promise<boolean> {
  const result = (await manager.query(
    `UPDATE runs SET state = $3::text, status_message = $4::jsonb, ${BUMP_UPDATED_AT},
            started_at = CASE WHEN $3::text = 'INPROGRESS' THEN COALESCE(started_at, clock_timestamp()) ELSE started_at END,
            ended_at = CASE WHEN ${RANK('$3::text')} = ${stateRank('SUCCEEDED')} THEN clock_timestamp() ELSE ended_at END
      WHERE run_id = $1 AND turn = $2 AND ${RANK('state')} < ${RANK('$3::text')}
        AND $3::text IN (${sqlList(FORWARD_TARGETS)})
      RETURNING run_id`,
    [input.runId, input.turn, input.state, input.statusMessage ? storableJson(input.statusMessage) : null],
  )) as [unknown[], number];
  const applied = result[1] > 0;
  if (applied) {
    await appendRunEvent(manager, {
      runId: input.runId,
      eventKey: `state-t${input.turn}-${input.state}`,
      kind: 'state',
      turn: input.turn,
      payload: input.statusMessage
        ? { state: input.state, status_message: input.statusMessage }
        : { state: input.state },
    });
  }
  return applied;
}

/**
 * Moves a working run to BLOCKED (a call of `approvalId` waits for a person) and gives up its
 * team slot: it asks for one again once the call is decided. The state entry is keyed by the
 * approval, since a turn may block more than once. Caller holds the row lock.
 */
export async function blockRun(
  manager: EntityManager,
  input: { runId: string; turn: number; approvalId: string; statusMessage: RunStatusMessage },
): Promise<boolean> {
  const [, blocked] = (await manager.query(
    `UPDATE runs SET state = 'BLOCKED', status_message = $3::jsonb, admitted_turn = NULL, holds_slot = false,
            admission_asked_turn = NULL, ${BUMP_UPDATED_AT}
      WHERE run_id = $1 AND turn = $2 AND state IN (${sqlList(BLOCKABLE)})`,
    [input.runId, input.turn, storableJson(input.statusMessage)],
  )) as [unknown[], number];
  if (blocked !== 1) return false;
  await appendRunEvent(manager, {
    runId: input.runId,
    eventKey: `state-t${input.turn}-BLOCKED-${input.approvalId}`,
    kind: 'state',
    turn: input.turn,
    payload: { state: 'BLOCKED', status_message: input.statusMessage },
  });
  return true;
}

/** Moves a blocked run back to INPROGRESS once the call of `approvalId` is decided. Caller holds the row lock. */
export async function unblockRun(
  manager: EntityManager,
  input: { runId: string; turn: number; approvalId: string },
): Promise<boolean> {
  const [, unblocked] = (await manager.query(
    `UPDATE runs SET state = 'INPROGRESS', status_message = NULL, ${BUMP_UPDATED_AT}
      WHERE run_id = $1 AND turn = $2 AND state IN (${sqlList(UNBLOCKABLE)})`,
    [input.runId, input.turn],
  )) as [unknown[], number];
  if (unblocked !== 1) return false;
  await appendRunEvent(manager, {
    runId: input.runId,
    eventKey: `state-t${input.turn}-INPROGRESS-${input.approvalId}`,
    kind: 'state',
    turn: input.turn,
    payload: { state: 'INPROGRESS', resumed: true },
  });
  return true;
}

/** Records CANCELLED for a run that has not reached a terminal state (in `turn`, when given). */
export async function applyCancellation(manager: EntityManager, runId: string, turn?: number): Promise<boolean> {
  const rows = (await manager.query(
    `UPDATE runs SET state = 'CANCELLED', ${BUMP_UPDATED_AT}, ended_at = clock_timestamp(),
            status_message = jsonb_build_object(
              'message', 'Run cancelled by ' || COALESCE(cancel_requested_by, 'an operator (workflow cancelled in Temporal)') || '.',
              'retryable', false)
      WHERE run_id = $1 AND state IN (${sqlList(CANCELLABLE)}) AND ($2::int IS NULL OR turn = $2::int)
      RETURNING turn, status_message`,
    [runId, turn ?? null],
  )) as [{ turn: number; status_message: RunStatusMessage }[], number];
  const row = rows[0][0];
  if (!row) return false;
  await appendRunEvent(manager, {
    runId,
    eventKey: `state-t${row.turn}-CANCELLED`,
    kind: 'state',
    turn: row.turn,
    payload: { state: 'CANCELLED', status_message: row.status_message },
  });
  return true;
}

/**
 * Appends every recorded, undelivered follow-up to the conversation, in order. Caller holds the
 * row lock. The first one in normal mode after a message in plan mode says so (`after_plan`):
 * the model is told that the plan may now be carried out.
 */
export async function deliverFollowups(manager: EntityManager, runId: string, turn: number): Promise<number> {
  const followups = (await manager.query(
    `SELECT id, seq, message, mode FROM followups WHERE run_id = $1 AND delivered_at IS NULL ORDER BY seq`,
    [runId],
  )) as { id: string; seq: number; message: string; mode: string }[];
  let previousMode = followups.length ? await latestMessageMode(manager, runId) : 'normal';
  for (const f of followups) {
    const afterPlan = previousMode === 'plan' && f.mode !== 'plan';
    await appendRunEvent(manager, {
      runId,
      eventKey: `followup-${f.id}`,
      kind: 'followup',
      turn,
      payload: {
        followup_id: f.id,
        seq: f.seq,
        message: f.message,
        mode: f.mode,
        ...(afterPlan ? { after_plan: true } : {}),
      },
    });
    previousMode = f.mode;
  }
  if (followups.length > 0) {
    await manager.query(`UPDATE followups SET delivered_at = clock_timestamp() WHERE id = ANY($1::uuid[])`, [
      followups.map((f) => f.id),
    ]);
  }
  return followups.length;
}

/**
 * Whether follow-ups were sent after the run's cancel request and wait undelivered (they continue
 * the run). Decided by sequence number: the cancel request recorded the last one it saw.
 */
export async function followupsSentAfterCancel(manager: EntityManager, runId: string): Promise<boolean> {
  const [{ count }] = (await manager.query(
    `SELECT count(*)::int AS count FROM followups f JOIN runs r ON r.run_id = f.run_id
      WHERE f.run_id = $1 AND f.delivered_at IS NULL
        AND f.seq > COALESCE(r.cancel_followup_seq, 2147483647)`,
    [runId],
  )) as [{ count: number }];
  return count > 0;
}

/** Records who asked to cancel, and the last follow-up sent before the request. Caller holds the row lock. */
export async function recordCancelRequest(manager: EntityManager, runId: string, by: string): Promise<void> {
  await manager.query(
    `UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, clock_timestamp()),
            cancel_requested_by = COALESCE(cancel_requested_by, $2),
            cancel_followup_seq = COALESCE(cancel_followup_seq,
              (SELECT COALESCE(MAX(seq), 0) FROM followups WHERE run_id = $1))
      WHERE run_id = $1`,
    [runId, by],
  );
}

/** Follow-ups recorded but not yet in the conversation (they join when the run next steps). */
export async function pendingFollowups(
  manager: EntityManager,
  runId: string,
): Promise<{ seq: number; message: string; mode: string; createdAt: Date }[]> {
  const rows = (await manager.query(
    `SELECT seq, message, mode, created_at FROM followups WHERE run_id = $1 AND delivered_at IS NULL ORDER BY seq`,
    [runId],
  )) as { seq: number; message: string; mode: string; created_at: Date }[];
  return rows.map((r) => ({ seq: r.seq, message: r.message, mode: r.mode, createdAt: r.created_at }));
}
