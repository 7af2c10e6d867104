import { ApiError } from '../../core/api-error';
import type { Logger } from '../../core/logger';
import { restoreMode, restoreModePasses, type PausedInRestoreMode } from '../../core/metrics';

/**
 * Restore mode (RESTORE_MODE=true): PostgreSQL was restored from a backup and may be older than
 * Temporal, the object store and the workers' disks. Until an operator has checked it against
 * Temporal (`npm run restore -- check`), nothing acts on the database's word alone: a run it
 * does not know may be live, a run it says ended may be working. Reads are served; runs whose
 * workflows go on keep working; new runs, forks and follow-ups wait (503).
 */

/** Seconds a refused caller is told to wait: an operator's check and restart take minutes. */
const RETRY_AFTER_SECONDS = 60;

/** At a process's start: the gauge, and one warning that says what is held back and until when. */
export function announceRestoreMode(on: boolean, logger: Logger): void {
  restoreMode.set(on ? 1 : 0);
  if (!on) return;
  logger.warn(
    "RESTORE_MODE=true: the reconciler, workspace sweeps, run retention, the object collector and schedules' firings are paused, and new runs, forks and follow-ups are refused; run `npm run restore -- check`, resolve what it lists, then restart without RESTORE_MODE",
  );
}

/**
 * Whether restore mode holds `pass` back this time: when it does, says so at warn and counts it
 * (`agent_runs_restore_mode_paused_total`). Call once per pass, before it reads anything.
 */
export function pausedForRestore(on: boolean, logger: Logger, pass: PausedInRestoreMode): boolean {
  if (!on) return false;
  restoreModePasses.inc({ pass });
  logger.warn('restore mode: pass skipped (RESTORE_MODE=true)', { pass });
  return true;
}

/** The reason new work is refused in restore mode, for a schedule's firing or a 503. */
export const RESTORE_MODE_REFUSAL =
  'The service is in restore mode (RESTORE_MODE=true): its database was restored from a backup and is being checked against Temporal, so it starts no new run, fork or follow-up until an operator turns restore mode off. Reads work; retry later.';

/** Throws 503 `resource_unavailable` in restore mode: what would start new work waits. */
export function refuseNewWorkInRestoreMode(on: boolean): void {
  if (!on) return;
  throw new ApiError('resource_unavailable', RESTORE_MODE_REFUSAL, {
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });
}
