import { ActivityFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhook-activities';
import {
  webhookQueue,
  type WebhookDeliveryInput,
  type WebhookDeliveryResult,
  type WebhookSweepResult,
} from './webhook-contract';

/**
 * Delivers one event to one webhook: POSTs until a 2xx, retried by Temporal with exponential
 * backoff for the retry window, then records it given up. Each attempt records its outcome in
 * the delivery log.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const taskQueue = webhookQueue(workflowInfo().taskQueue);
  const { retry } = input;
  // One attempt: the POST's timeout, and a little for reading the event and recording the outcome.
  const attemptMs = (input.timeoutSeconds + 5) * 1000;
  const { deliverWebhook } = proxyActivities<WebhookActivities>({
    taskQueue,
    startToCloseTimeout: attemptMs,
    // Temporal schedules no retry that would start past this deadline. An attempt that ends it
    // began at most one attempt and one (largest) interval before: so attempts go on for at least
    // the window.
    scheduleToCloseTimeout: retry.windowSeconds * 1000 + retry.maxIntervalMs + attemptMs,
    retry: {
      initialInterval: retry.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: retry.maxIntervalMs,
      // No attempt limit: the window above ends the retries.
    },
  });
  const { markWebhookDeliveryGivenUp } = proxyActivities<WebhookActivities>({
    taskQueue,
    startToCloseTimeout: '1 minute',
  });
  try {
    return await deliverWebhook({ deliveryId: input.deliveryId, timeoutSeconds: input.timeoutSeconds });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    await markWebhookDeliveryGivenUp({
      deliveryId: input.deliveryId,
      reason: `no 2xx within the retry window of ${retry.windowSeconds} s`,
    });
    return 'given_up';
  }
}

/** One firing of the sweep: starts the workflows of deliveries nobody started, prunes the old log. */
export async function webhookSweepWorkflow(): Promise<WebhookSweepResult> {
  const { sweepWebhookDeliveries } = proxyActivities<WebhookActivities>({
    taskQueue: webhookQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 3 },
  });
  return sweepWebhookDeliveries();
}
