import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../core/config';
import {
  MAINTENANCE_INTERVAL,
  MAINTENANCE_WORKFLOW_TYPE,
  maintenanceScheduleId,
  maintenanceWorkflowId,
} from '../workflows/maintenance-contract';
import {
  WEBHOOK_SWEEP_INTERVAL,
  WEBHOOK_SWEEP_WORKFLOW_TYPE,
  webhookSweepScheduleId,
  webhookSweepWorkflowId,
} from '../workflows/webhook-contract';

interface ServiceSchedule {
  scheduleId: string;
  workflowType: string;
  workflowId: string;
  every: string;
  purpose: string;
}

/** The service's own Temporal Schedules on this task queue: the webhook sweep and maintenance. */
function serviceSchedules(taskQueue: string): ServiceSchedule[] {
  return [
    {
      scheduleId: webhookSweepScheduleId(taskQueue),
      workflowType: WEBHOOK_SWEEP_WORKFLOW_TYPE,
      workflowId: webhookSweepWorkflowId(taskQueue),
      every: WEBHOOK_SWEEP_INTERVAL,
      purpose: 'Starts webhook deliveries whose workflow was never started; prunes the delivery log.',
    },
    {
      scheduleId: maintenanceScheduleId(taskQueue),
      workflowType: MAINTENANCE_WORKFLOW_TYPE,
      workflowId: maintenanceWorkflowId(taskQueue),
      every: MAINTENANCE_INTERVAL,
      purpose: 'Prunes idempotency records past their 24 hours.',
    },
  ];
}

/**
 * Creates the service's Temporal Schedules for this task queue, unless they exist: every worker
 * calls this at start. A firing never overlaps the previous one, and one that finds no worker
 * ends after five minutes.
 */
export async function ensureServiceSchedules(temporal: Client, config: Config): Promise<void> {
  const { taskQueue, rpcTimeoutMs } = config.temporal;
  for (const schedule of serviceSchedules(taskQueue)) {
    try {
      await temporal.withDeadline(Date.now() + rpcTimeoutMs, () =>
        temporal.schedule.create({
          scheduleId: schedule.scheduleId,
          spec: { intervals: [{ every: schedule.every }] },
          action: {
            type: 'startWorkflow',
            workflowType: schedule.workflowType,
            workflowId: schedule.workflowId,
            taskQueue,
            args: [],
            workflowRunTimeout: '5 minutes',
          },
          policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: schedule.every },
          memo: { purpose: schedule.purpose },
        }),
      );
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
  }
}
