import { Context } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import { appendRunEvent } from '../../db/run-events';
import { claimStepAttempt, releaseStepAttempt } from '../../db/step-attempts';

/**
 * Runs one attempt of agent step `step` of `turn`, saying in the transcript when it resumes an
 * attempt that its worker left unfinished (killed, or stopped by Ctrl-C or a deploy): the step is
 * marked while an attempt runs, and the mark stays when the worker goes away under it. An attempt
 * that ends by itself, failed or not, clears it: Temporal's retry of an ordinary failure is no
 * interruption.
 */
export async function withStepAttempt<T>(
  dataSource: DataSource,
  at: { runId: string; turn: number; step: number },
  work: () => Promise<T>,
): Promise<T> {
  const ctx = Context.current();
  const stepKey = `t${at.turn}-s${at.step}`;
  const attempt = ctx.info.attempt;
  // The mark of an attempt its worker left: whether this is Temporal's retry of that activity or,
  // once the workflow gave the workspace up, a new activity elsewhere (attempt 1 again).
  if (await claimStepAttempt(dataSource.manager, at.runId, stepKey)) {
    await appendRunEvent(dataSource.manager, {
      runId: at.runId,
      eventKey: `step-resume-${stepKey}-${ctx.info.activityId}-a${attempt}`,
      kind: 'notice',
      turn: at.turn,
      payload: {
        message: `Step ${at.step + 1} of this turn was interrupted (its worker stopped); it runs again.`,
      },
    });
  }
  try {
    return await work();
  } finally {
    // A worker stopping under the attempt (Ctrl-C, a deploy) leaves the mark for the next one.
    if (!ctx.cancellationDetails?.workerShutdown) await releaseStepAttempt(dataSource.manager, at.runId, stepKey);
  }
}
