import { existsSync } from 'node:fs';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { RunFailureType } from '../../workflows/run-contract';
import type { ActivityDeps } from '../deps';
import { withHeartbeat } from '../heartbeat';
import { workspaceDir } from '../workspace/workspace-paths';
import { createDeliverRun } from './deliver-run';
import { failureToThrow } from './delivery-failures';

/** Attempts of the delivery activity (workflows/run/activity-proxies.ts): on the last, a forge still down fails the turn. */
export const DELIVERY_ATTEMPTS = 5;

/**
 * After a turn that ended with changes, on the worker that holds the workspace: the run's
 * delivery (deliver-run.ts), the turn failing with the first repository that fails.
 */
export function createDeliveryActivities(deps: ActivityDeps) {
  const deliverRun = createDeliverRun(deps);

  return {
    async deliverPullRequests({ runId, turn, at }: { runId: string; turn: number; at: number }): Promise<void> {
      const ctx = Context.current();
      await withHeartbeat(async () => {
        const workspace = workspaceDir(deps.config.workspace.dir, runId);
        if (!existsSync(workspace)) {
          throw ApplicationFailure.nonRetryable(
            `The workspace of run ${runId} is not on this worker`,
            RunFailureType.WORKSPACE_LOST,
          );
        }
        const results = await deliverRun({ runId, turn, at, workspace, stopAtFailure: true });
        for (const result of results ?? []) {
          if ('failure' in result) throw failureToThrow(result.failure, ctx.info.attempt >= DELIVERY_ATTEMPTS);
        }
      });
    },
  };
}
