import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from '../../core/config';
import type { Logger } from '../../core/logger';
import {
  claimUnstartedDeliveries,
  markDeliveryWorkflowsStarted,
  releaseDeliveryClaims,
} from '../../db/webhook-deliveries';
import {
  WEBHOOK_DELIVERY_WORKFLOW_TYPE,
  webhookDeliveryWorkflowId,
  type WebhookDeliveryInput,
  type WebhookDeliveryWorkflow,
} from '../../workflows/webhook-contract';

const BATCH = 100;

export interface DeliveryStarterDeps {
  dataSource: DataSource;
  temporal: Client;
  config: Config;
  logger: Logger;
}

/**
 * Starts the delivery workflows of every delivery of this task queue's webhooks that has none
 * yet, in batches; returns how many it started. Several workers may call it at once: each
 * claims different rows, and a workflow started twice is refused by its id. A start Temporal
 * refuses for another reason leaves the row for the next call (a notification or the sweep).
 */
export async function startUnstartedDeliveries({ dataSource, temporal, config, logger }: DeliveryStarterDeps) {
  const { taskQueue, rpcTimeoutMs } = config.temporal;
  let started = 0;
  for (;;) {
    const ids = await claimUnstartedDeliveries(dataSource.manager, taskQueue, BATCH);
    if (ids.length === 0) return started;
    const outcomes = await Promise.allSettled(
      ids.map((deliveryId) => {
        const input: WebhookDeliveryInput = {
          deliveryId,
          timeoutSeconds: config.webhooks.timeoutSeconds,
          retry: config.webhooks.retry,
        };
        return temporal.withDeadline(Date.now() + rpcTimeoutMs, () =>
          temporal.workflow.start<WebhookDeliveryWorkflow>(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
            taskQueue,
            workflowId: webhookDeliveryWorkflowId(deliveryId),
            // A finished delivery is never sent again under its id.
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            // This worker takes the first task itself when it can, without a round through the queue.
            requestEagerStart: true,
            args: [input],
          }),
        );
      }),
    );
    const running = ids.filter((_, i) => {
      const outcome = outcomes[i]!;
      return outcome.status === 'fulfilled' || outcome.reason instanceof WorkflowExecutionAlreadyStartedError;
    });
    const failed = ids.filter((id) => !running.includes(id));
    await markDeliveryWorkflowsStarted(dataSource.manager, running);
    started += running.length;
    if (failed.length > 0) {
      await releaseDeliveryClaims(dataSource.manager, failed);
      const firstError = outcomes.find((o, i) => o.status === 'rejected' && failed.includes(ids[i]!));
      logger.warn('could not start webhook delivery workflows; they are tried again later', {
        count: failed.length,
        error: firstError?.status === 'rejected' ? firstError.reason : undefined,
      });
      return started;
    }
    if (ids.length < BATCH) return started;
  }
}
