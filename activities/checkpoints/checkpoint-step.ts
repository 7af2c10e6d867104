import { checkpointBytesAdded, checkpointDuration, checkpointsTaken } from '../../core/metrics';
import { appendNoticeToCurrentTurn } from '../../db/run-events';
import { runTeamStoredBytes } from '../../db/team-storage-reads';
import type { ActivityDeps } from '../deps';

/**
 * Takes the run's checkpoint once a step is done (`stepsDone` steps of `turn`). A checkpoint
 * that fails (the object store down, say) does not fail the step: the run goes on, the
 * transcript says so, and the next checkpoint takes everything changed since the last one.
 */
export function createCheckpointStep({ checkpoints, dataSource, logger, config }: ActivityDeps) {
  return async (runId: string, turn: number, stepsDone: number): Promise<void> => {
    if (!checkpoints) return;
    if (await storageFull(runId, turn)) return;
    const stop = checkpointDuration.startTimer();
    try {
      const taken = await checkpoints.take(runId, { turn, step: stepsDone });
      checkpointsTaken.inc({ outcome: taken ? 'recorded' : 'unchanged' });
      if (taken) checkpointBytesAdded.inc(taken.bytesAdded);
    } catch (err) {
      checkpointsTaken.inc({ outcome: 'failed' });
      logger.warn('a checkpoint failed; the run goes on without it', {
        run_id: runId,
        turn,
        step: stepsDone,
        error: err,
      });
      await appendNoticeToCurrentTurn(dataSource.manager, runId, `checkpoint-failed-t${turn}-s${stepsDone}`, {
        message: `The checkpoint after step ${stepsDone} could not be stored (${(err as Error).message}); the run goes on, and the next checkpoint takes what changed since the last one.`,
        level: 'warning',
      }).catch(() => undefined);
    } finally {
      stop();
    }
  };

  /** Whether the run's team keeps TEAM_MAX_STORED_BYTES already: then no checkpoint, and the transcript says so once a turn. */
  async function storageFull(runId: string, turn: number): Promise<boolean> {
    const cap = config.quotas.teamMaxStoredBytes;
    if (cap <= 0) return false;
    const stored = await runTeamStoredBytes(dataSource.manager, runId);
    if (stored < cap) return false;
    checkpointsTaken.inc({ outcome: 'over_team_storage' });
    await appendNoticeToCurrentTurn(dataSource.manager, runId, `checkpoint-storage-full-t${turn}`, {
      message: `No checkpoint of this run's files is taken while its team keeps ${stored} bytes, the most it may keep (TEAM_MAX_STORED_BYTES=${cap}): a worker that stops now loses the steps since the last one.`,
      level: 'warning',
    });
    return true;
  }
}
