import { Context } from '@temporalio/activity';
import { checkpointRestores } from '../../core/metrics';
import { latestCheckpoint, type CheckpointRow } from '../../db/checkpoint-reads';
import type { RunImage } from '../../db/run-images';
import type { ActivityDeps } from '../deps';
import type { WorkspaceContext } from '../workspace/workspace-context';

/**
 * Makes a new workspace of a run that has a checkpoint (its worker is gone, drained, or its
 * workspace was given up after an idle window) what its latest checkpoint holds: every step it
 * completed keeps its files. Undefined when the run has none (it is provisioned from scratch).
 */
export function createRestoreRunFiles({ checkpoints, dataSource }: ActivityDeps, { note }: WorkspaceContext) {
  return async (runId: string, turn: number, image?: RunImage): Promise<CheckpointRow | undefined> => {
    if (!checkpoints) return undefined;
    const latest = await latestCheckpoint(dataSource.manager, runId);
    if (!latest) return undefined;
    await checkpoints.restore(runId, latest);
    checkpointRestores.inc({ reason: 'resume' });
    const ctx = Context.current();
    await note(
      runId,
      turn,
      `workspace-t${turn}-${ctx.info.activityId}`,
      `Workspace on worker ${ctx.info.taskQueue}: the run's files as its checkpoint after step ${latest.step} of turn ${latest.turn} left them (${latest.files} files, ${mib(latest.bytes)}).`,
      image,
    );
    return latest;
  };
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
