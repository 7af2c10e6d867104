import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../core/config';
import {
  WEBHOOK_SWEEP_INTERVAL,
  WEBHOOK_SWEEP_WORKFLOW_TYPE,
  webhookSweepScheduleId,
  webhookSweepWorkflowId,
} from '../workflows/webhook-contract';

/**
 * Creates the Temporal Schedule of the webhook sweep for this task queue, unless it exists:
 * every worker calls this at start. A firing never overlaps the previous one, and one that finds
 * no worker ends after five minutes.
 */
export async function ensureWebhookSweepSchedule(temporal: Client, config: Config): Promise<void> {
  const { taskQueue, rpcTimeoutMs } = config.temporal;
  try {
    await temporal.withDeadline(Date.now() + rpcTimeoutMs, () =>
      temporal.schedule.create({
        scheduleId: webhookSweepScheduleId(taskQueue),
        spec: { intervals: [{ every: WEBHOOK_SWEEP_INTERVAL }] },
        action: {
          type: 'startWorkflow',
          workflowType: WEBHOOK_SWEEP_WORKFLOW_TYPE,
          workflowId: webhookSweepWorkflowId(taskQueue),
          taskQueue,
          args: [],
          workflowRunTimeout: '5 minutes',
        },
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: WEBHOOK_SWEEP_INTERVAL },
        memo: { purpose: 'Starts webhook deliveries whose workflow was never started; prunes the delivery log.' },
      }),
    );
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
}
