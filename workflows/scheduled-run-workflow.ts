import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RunActivities } from '../activities';
import {
  SCHEDULED_RUN_MAX_ATTEMPTS,
  ScheduleFailureType,
  type ScheduledRunInput,
  type ScheduledRunResult,
} from './schedule-contract';

/**
 * One firing of a schedule: creates its run through the service's own create path (an
 * activity), then ends; the run has its own workflow from there.
 */
export async function scheduledRunWorkflow(input: ScheduledRunInput): Promise<ScheduledRunResult> {
  const { createScheduledRun } = proxyActivities<RunActivities>({
    startToCloseTimeout: '1 minute',
    retry: {
      initialInterval: '1s',
      maximumInterval: '30s',
      maximumAttempts: SCHEDULED_RUN_MAX_ATTEMPTS,
      nonRetryableErrorTypes: [ScheduleFailureType.SPAWN_REFUSED],
    },
  });
  return createScheduledRun({ scheduleId: input.scheduleId, firingId: workflowInfo().workflowId });
}
