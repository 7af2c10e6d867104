import type { EntityManager } from 'typeorm';
import type { RunStatusMessage } from '../core/run-types';
import { isTerminal } from '../core/run-state';
import { markWorkflowStarted } from './run-creation';
import { lockRun, lockRunCreation, reopenRun } from './run-store';

/** How long a queued run that has not asked for a slot yet keeps its place ahead of later runs. */
export const ADMISSION_GRACE_SECONDS = 10;

/**
 * A run that waits for a slot: QUEUED (or BLOCKED, its call decided, and asking to go on: a
 * blocked run gave its slot up), not admitted for its turn, and not the child of an
 * unfinished run (such a child is admitted under its parent's slot, at once); and its workflow
 * asked for one, or may still be about to (it was queued within the grace period). A QUEUED run
 * that no workflow works on (its start was lost; the reconciler settles it) would otherwise hold
 * every later run of its team back. `r` is the run.
 */
const WAITS_FOR_SLOT = `(r.state = 'QUEUED' OR (r.state = 'BLOCKED' AND r.admission_asked_turn = r.turn))
  AND r.admitted_turn IS DISTINCT FROM r.turn
  AND (r.admission_asked_turn = r.turn OR r.queued_at > clock_timestamp() - interval '${ADMISSION_GRACE_SECONDS} seconds')
  AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.run_id = r.parent_run_id AND p.state IN ('QUEUED', 'INPROGRESS'))`;

/** Queued before the run `$2` (in admission order). */
const BEFORE_THE_RUN = `(r.queued_at, r.run_id) < (SELECT queued_at, run_id FROM runs WHERE run_id = $2)`;

/** A run that holds one of its team's slots: admitted for its turn on its own slot and unfinished (a BLOCKED run holds none). */
const HOLDS_SLOT = `r.state IN ('QUEUED', 'INPROGRESS') AND r.admitted_turn = r.turn AND r.holds_slot`;

/** Serialises the admission decisions of one team (every API instance and worker takes the same lock). */
async function lockTeamAdmission(manager: EntityManager, teamId: string): Promise<void> {
  await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended('team-admission:' || $1, 0))`, [teamId]);
}

async function markAdmitted(manager: EntityManager, runId: string, holdsSlot: boolean): Promise<void> {
  await manager.query(`UPDATE runs SET admitted_turn = turn, holds_slot = $2 WHERE run_id = $1`, [runId, holdsSlot]);
}

export type Admission =
  | { admitted: true; teamId: string; turn: number }
  | {
      admitted: false;
      teamId: string;
      /** The turn the decision is about (a reopened one when follow-ups waited). */
      turn: number;
      statusMessage: RunStatusMessage;
      /**
       * When the run would fit but for runs ahead that have not asked yet: seconds until their
       * grace ends, when the run should look again (nobody signals that moment).
       */
      recheckSeconds?: number;
    };

/**
 * Admits the run's current turn if its team has a free slot for it and for every run queued
 * before it that waits for one (of `maxConcurrent`); otherwise records on the run why it waits. A run
 * that ended with follow-ups waiting is reopened first (as `startTurn` would), so its new turn
 * queues too. Null when the run does not exist. Takes the run's creation lock (waiting for the
 * API's transaction that created it) and its team's admission lock: decisions of one team are
 * made one at a time, in one order, whichever process makes them.
 */
export async function admitRunTurn(
  manager: EntityManager,
  runId: string,
  maxConcurrent: number,
): Promise<Admission | null> {
  await lockRunCreation(manager, runId);
  const [found] = (await manager.query(`SELECT team_id FROM runs WHERE run_id = $1`, [runId])) as {
    team_id: string;
  }[];
  if (!found) return null;
  const teamId = found.team_id;
  // This runs in the run's workflow: the workflow exists, whatever became of the API that started it.
  await markWorkflowStarted(manager, runId);
  // All that concerns only this run is done under its own row lock, before the team's lock: a
  // burst of one team's runs queues on that lock, so it is held for one statement and the commit.
  const locked = (await lockRun(manager, runId))!;
  let turn = locked.turn;
  if (isTerminal(locked.state)) {
    // Nothing to run: `startTurn` finds no turn and the execution goes idle.
    if (locked.pendingFollowups === 0) return { admitted: true, teamId, turn };
    // Queued anew under the team's lock: a run created meanwhile either counts this one as
    // queued before it or was queued first.
    await lockTeamAdmission(manager, teamId);
    turn = await reopenRun(manager, runId, locked.turn);
  }
  const [askedRows] = (await manager.query(
    `UPDATE runs r SET admission_asked_turn = r.turn WHERE r.run_id = $1
     RETURNING r.state, r.admitted_turn = r.turn AS admitted,
       EXISTS (SELECT 1 FROM runs p WHERE p.run_id = r.parent_run_id AND p.state IN ('QUEUED', 'INPROGRESS')) AS under_parent`,
    [runId],
  )) as [{ state: string; admitted: boolean | null; under_parent: boolean }[], number];
  const asked = askedRows[0]!;
  if (asked.admitted) return { admitted: true, teamId, turn };
  // Already running (its turn began before admission existed): it holds a slot as it is.
  if (asked.state === 'INPROGRESS' || maxConcurrent === 0) {
    await markAdmitted(manager, runId, true);
    return { admitted: true, teamId, turn };
  }
  // A factory's child runs while its parent holds the slot: it never waits for its own parent's
  // slot to free (which would deadlock a foreman waiting for its children).
  if (asked.under_parent) {
    await markAdmitted(manager, runId, false);
    return { admitted: true, teamId, turn };
  }
  await lockTeamAdmission(manager, teamId);
  // Room for this run and for every run queued before it that waits: it takes no older run's slot.
  const [decision] = (await manager.query(
    `WITH counts AS (
       SELECT count(*) FILTER (WHERE ${HOLDS_SLOT})::int AS holders,
              count(*) FILTER (WHERE ${WAITS_FOR_SLOT} AND ${BEFORE_THE_RUN})::int AS ahead,
              count(*) FILTER (WHERE ${WAITS_FOR_SLOT} AND ${BEFORE_THE_RUN} AND r.admission_asked_turn IS DISTINCT FROM r.turn)::int AS unasked,
              ceil(extract(epoch FROM max(r.queued_at) FILTER (WHERE ${WAITS_FOR_SLOT} AND ${BEFORE_THE_RUN})
                + interval '${ADMISSION_GRACE_SECONDS} seconds' - clock_timestamp()))::int AS grace_left
         FROM runs r WHERE r.team_id = $1 AND r.state IN ('QUEUED', 'INPROGRESS', 'BLOCKED')
     ), admitted AS (
       UPDATE runs SET admitted_turn = turn, holds_slot = true
        WHERE run_id = $2 AND (SELECT holders + ahead < $3 FROM counts)
        RETURNING 1
     )
     SELECT c.*, EXISTS (SELECT 1 FROM admitted) AS admitted FROM counts c`,
    [teamId, runId, maxConcurrent],
  )) as { holders: number; ahead: number; unasked: number; grace_left: number | null; admitted: boolean }[];
  const { holders, ahead, unasked, grace_left: graceLeft } = decision!;
  if (decision!.admitted) return { admitted: true, teamId, turn };
  const statusMessage: RunStatusMessage = {
    message: `Waiting for a slot: ${holders} of this team's runs are in progress and TEAM_MAX_CONCURRENT_RUNS allows ${maxConcurrent} at once${
      ahead ? `; ${ahead} run(s) queued before this one wait for a slot first` : ''
    }. This run starts when a slot frees.`,
    retryable: true,
  };
  await manager.query(
    `UPDATE runs SET status_message = $2::jsonb, updated_at = GREATEST(clock_timestamp(), updated_at + interval '1 millisecond')
      WHERE run_id = $1 AND state IN ('QUEUED', 'BLOCKED') AND status_message IS DISTINCT FROM $2::jsonb`,
    [runId, JSON.stringify(statusMessage)],
  );
  // Runs that have not asked may never ask (a lost start): when their grace ends, this run would fit.
  const fitsOnceUnaskedLapse = unasked > 0 && holders + ahead - unasked < maxConcurrent;
  return {
    admitted: false,
    teamId,
    turn,
    statusMessage,
    ...(fitsOnceUnaskedLapse ? { recheckSeconds: Math.max(1, (graceLeft ?? 0) + 1) } : {}),
  };
}

/**
 * The runs of the team that should look again for a slot now: of the oldest waiting ones, as
 * many as the team has free slots, those that asked and were refused. One that has not asked yet
 * keeps its place but needs no wake-up: it asks on its own, and is decided after this admission.
 * (Waking those too cost a burst of n runs n²/2 signals, each a workflow task.) Caller is in a
 * transaction: the team's lock makes a refusal still being decided commit first, so that a run
 * refused a moment before the slot freed is seen as having asked, and woken.
 */
export async function runsToAdmitNext(
  manager: EntityManager,
  teamId: string,
  maxConcurrent: number,
): Promise<string[]> {
  if (maxConcurrent === 0) return [];
  await lockTeamAdmission(manager, teamId);
  const rows = (await manager.query(
    `SELECT run_id FROM (
       SELECT r.run_id, r.queued_at, r.admission_asked_turn = r.turn AS asked FROM runs r
        WHERE r.team_id = $1 AND ${WAITS_FOR_SLOT}
        ORDER BY r.queued_at, r.run_id
        LIMIT GREATEST($2 - (SELECT count(*) FROM runs r WHERE r.team_id = $1 AND ${HOLDS_SLOT}), 0)
     ) oldest
     WHERE asked
     ORDER BY queued_at, run_id`,
    [teamId, maxConcurrent],
  )) as { run_id: string }[];
  return rows.map((r) => r.run_id);
}

/** The team of a run; null when the run does not exist. */
export async function teamOfRun(manager: EntityManager, runId: string): Promise<string | null> {
  const [row] = (await manager.query(`SELECT team_id FROM runs WHERE run_id = $1`, [runId])) as { team_id: string }[];
  return row?.team_id ?? null;
}

/** Marks the run admitted for the turn it starts, if it was not (a run started by code from before admission). */
export async function admitStartedTurn(manager: EntityManager, runId: string): Promise<void> {
  await manager.query(
    `UPDATE runs SET admitted_turn = turn, holds_slot = true WHERE run_id = $1 AND admitted_turn IS DISTINCT FROM turn`,
    [runId],
  );
}
