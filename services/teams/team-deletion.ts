import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { ApiError } from '../../core/api-error';
import type { Config } from '../../core/config';
import { isUuid } from '../../core/ids';
import type { Logger } from '../../core/logger';
import type { RunState } from '../../core/run-state';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { TEAM_TABLES, type TeamTable } from '../../db/team-data-tables';
import type { AuditActor } from '../../core/audit/audit-event';
import type { AuditLog } from '../audit/audit-log';
import {
  countTeamRows,
  deleteSchedulesById,
  deleteTeamRowsBatch,
  findTeam,
  liveTeamRuns,
  revokeTeamKeys,
  teamScheduleIds,
  type TeamRef,
} from '../../db/team-deletion';
import { teamStoredBytes } from '../../db/team-storage-reads';
import { temporalScheduleId } from '../../workflows/schedule-contract';
import { createCancellation } from '../runs/cancel-run';
import { createRunDeletion } from '../runs/run-deletion';
import { createRunWrites } from '../runs/run-writes';

/** Runs deleted per call of the run deletion (each tree in a transaction of its own, as retention does). */
const RUN_BATCH = 50;
/** Rows of the team's other tables deleted per statement: short transactions, however big the team. */
const ROW_BATCH = 1000;
/** Live runs a refusal names (the rest are counted). */
const LIVE_NAMED = 20;
/** How long `--cancel-live` waits for the runs it cancelled to end. */
export const LIVE_RUNS_WAIT_MS = 5 * 60_000;
const POLL_MS = 1000;

export type LiveRuns = { runs: { runId: string; state: RunState }[]; total: number };

/** What deleting a team would delete: its rows table by table, its live runs, and the bytes of its runs' files. */
export interface TeamDeletionPlan {
  team: TeamRef;
  rows: Record<string, number>;
  live: LiveRuns;
  storedBytes: number;
}

/** The team has live runs and they were not to be cancelled: nothing of its runs was deleted. */
export class LiveRunsError extends Error {
  constructor(
    readonly live: LiveRuns,
    why: string,
  ) {
    const named = live.runs.map((r) => `${r.runId} (${r.state})`).join(', ');
    const more = live.total > live.runs.length ? ` and ${live.total - live.runs.length} more` : '';
    super(
      `${why}: ${named}${more}. Cancel them first, or run again with --cancel-live to cancel them and wait for them to end.`,
    );
  }
}

/** The team of that id or name and everything of it; null when there is no such team. */
export async function planTeamDeletion(dataSource: DataSource, idOrName: string): Promise<TeamDeletionPlan | null> {
  const team = await findTeam(dataSource.manager, idOrName, isUuid(idOrName));
  if (!team) return null;
  return {
    team,
    rows: await countTeamRows(dataSource.manager, team.id),
    live: await liveTeamRuns(dataSource.manager, team.id, LIVE_NAMED),
    storedBytes: await teamStoredBytes(dataSource.manager, team.id),
  };
}

export interface TeamDeletionDeps {
  config: Config;
  dataSource: DataSource;
  temporal: Client;
  logger: Logger;
  /** Where the deletion is recorded (`team.delete`, in the team's own log: it outlives the team, KEPT_TABLES), and as whose. */
  audit?: { log: AuditLog; actor: AuditActor };
}

/**
 * Deleting a team with everything it has (docs/operations.md, "Data lifecycle"): its keys are
 * revoked and its Temporal Schedules deleted first, so that nothing new starts; its live runs
 * refuse the deletion, or are cancelled and waited for; then its runs go as retention deletes
 * them, and its other rows table by table, a batch per statement. Every step deletes what is
 * left of something, so a deletion cut off anywhere goes on where it stopped when run again.
 */
export function createTeamDeletion(deps: TeamDeletionDeps) {
  const { dataSource, temporal, config } = deps;
  const rpcTimeoutMs = config.temporal.rpcTimeoutMs;
  const runDeletion = createRunDeletion({ ...deps, rpcTimeoutMs });
  const cancellation = createCancellation(deps, createRunWrites(deps));

  async function stopNewWork(team: TeamRef): Promise<void> {
    await revokeTeamKeys(dataSource.manager, team.id);
    for (;;) {
      const ids = await teamScheduleIds(dataSource.manager, team.id, ROW_BATCH);
      if (ids.length === 0) return;
      // Temporal first: once a Schedule is gone nothing fires; a row left behind is deleted on a rerun.
      for (const id of ids) {
        try {
          await temporal.withDeadline(Date.now() + rpcTimeoutMs, () =>
            temporal.schedule.getHandle(temporalScheduleId(id)).delete(),
          );
        } catch (err) {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        }
      }
      await deleteSchedulesById(dataSource.manager, ids);
    }
  }

  /** Cancels the team's live runs as an operator would, and waits (LIVE_RUNS_WAIT_MS at most) for none to be left. */
  async function cancelLiveRuns(team: TeamRef, say: (line: string) => void): Promise<void> {
    const operator = operatorPrincipal(team.id);
    const asked = new Set<string>();
    const deadline = Date.now() + LIVE_RUNS_WAIT_MS;
    for (;;) {
      const live = await liveTeamRuns(dataSource.manager, team.id, 100);
      if (live.total === 0) return;
      const toCancel = live.runs.filter((r) => !asked.has(r.runId));
      if (toCancel.length) say(`Cancelling ${toCancel.length} live runs (of ${live.total})...`);
      for (const { runId } of toCancel) {
        asked.add(runId);
        await cancellation.cancelRun(operator, runId).catch((err: unknown) => {
          // It ended meanwhile: nothing to cancel.
          if (!(err instanceof ApiError && err.code === 'operation_not_supported')) throw err;
        });
      }
      if (Date.now() > deadline)
        throw new LiveRunsError(
          live,
          `Runs still live ${LIVE_RUNS_WAIT_MS / 60_000} minutes after they were cancelled`,
        );
      await sleep(POLL_MS);
    }
  }

  /** Runs created between the check and the keys' revocation: the rest waits for them. */
  async function refuseRunsStartedSince(team: TeamRef): Promise<void> {
    const since = await liveTeamRuns(dataSource.manager, team.id, LIVE_NAMED);
    if (since.total)
      throw new LiveRunsError(
        since,
        `Runs started while the deletion began (its keys are revoked and its schedules deleted; nothing else was)`,
      );
  }

  async function deleteRuns(team: TeamRef, say: (line: string) => void): Promise<number> {
    let deleted = 0;
    let saidAt = Date.now();
    for (let more = true; more;) {
      const batch = await runDeletion.deleteTeamRuns(team.id, RUN_BATCH);
      if (batch.live.length) {
        throw new LiveRunsError(
          { runs: [], total: batch.live.length },
          `Runs became live while the team was deleted (${batch.live.join(', ')})`,
        );
      }
      deleted += batch.deleted;
      more = batch.more;
      if (Date.now() - saidAt > 5000) {
        say(`Deleted ${deleted} runs...`);
        saidAt = Date.now();
      }
    }
    return deleted;
  }

  async function deleteRows(table: TeamTable, teamId: string): Promise<number> {
    let deleted = 0;
    for (let n = -1; n !== 0; deleted += n) n = await deleteTeamRowsBatch(dataSource.manager, table, teamId, ROW_BATCH);
    return deleted;
  }

  return {
    /**
     * Deletes the team and everything of it. Live runs: a LiveRunsError before anything changes,
     * unless `cancelLive`. Returns the rows deleted by the team deletion itself, by table, and the runs.
     */
    async deleteTeam(
      team: TeamRef,
      options: { cancelLive: boolean; say: (line: string) => void },
    ): Promise<{ runs: number; rows: Record<string, number> }> {
      const live = await liveTeamRuns(dataSource.manager, team.id, LIVE_NAMED);
      if (live.total && !options.cancelLive)
        throw new LiveRunsError(live, `Team "${team.name}" has ${live.total} live runs; nothing was deleted`);
      await stopNewWork(team);
      if (options.cancelLive) await cancelLiveRuns(team, options.say);
      else await refuseRunsStartedSince(team);
      const runs = await deleteRuns(team, options.say);
      const rows: Record<string, number> = {};
      for (const table of TEAM_TABLES.filter((t) => t.deletedBy === 'team'))
        rows[table.table] = await deleteRows(table, team.id);
      await deps.audit?.log.record({
        teamId: team.id,
        action: 'team.delete',
        outcome: 'success',
        actor: deps.audit.actor,
        resource: { type: 'team', id: team.id },
        details: { team: team.name, runs },
      });
      return { runs, rows };
    },
  };
}

/** Who the runs' cancellation names: the operator who deleted their team. */
function operatorPrincipal(teamId: string): AuthenticatedPrincipal {
  return {
    uid: 'npm run teams -- delete',
    type: 'user',
    displayName: 'an operator',
    teamId,
    keyId: 'none',
    keyPrefix: 'none',
    role: 'admin',
    expiresAt: null,
  };
}
