/**
 * The contract of webhook deliveries: the delivery and sweep workflows, their inputs and
 * results, the queue their activities run on and the Temporal Schedule of the sweep. The worker,
 * the workflows and the activities import this module; nothing refers to these by string literal
 * elsewhere.
 */

export const WEBHOOK_DELIVERY_WORKFLOW_TYPE = 'webhookDeliveryWorkflow';
export const WEBHOOK_SWEEP_WORKFLOW_TYPE = 'webhookSweepWorkflow';

/** One workflow per delivery: starting it twice is refused by Temporal, so it is harmless. */
export function webhookDeliveryWorkflowId(deliveryId: string): string {
  return `webhook-delivery-${deliveryId}`;
}

/** The Temporal Schedule that sweeps the queue's deliveries whose workflow was never started. */
export function webhookSweepScheduleId(taskQueue: string): string {
  return `agent-webhooks-sweep-${taskQueue}`;
}

export function webhookSweepWorkflowId(taskQueue: string): string {
  return `agent-webhooks-sweep-${taskQueue}-firing`;
}

/** How often the sweep runs. */
export const WEBHOOK_SWEEP_INTERVAL = '1 minute';

/**
 * The queue of the activities that POST to receivers: workers poll it with slots of its own, so
 * slow receivers never hold up the activities of runs.
 */
export function webhookQueue(taskQueue: string): string {
  return `${taskQueue}/webhooks`;
}

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** Timeout of one POST. */
  timeoutSeconds: number;
  /** Backoff from the initial interval, doubling up to the maximum, for the window (then given up). */
  retry: { initialIntervalMs: number; maxIntervalMs: number; windowSeconds: number };
}

/** `gone`: the delivery no longer exists (its webhook was deleted), so nothing was sent. */
export type WebhookDeliveryResult = 'succeeded' | 'given_up' | 'gone';

export interface WebhookSweepResult {
  started: number;
  pruned: number;
}

export const WebhookFailureType = {
  /** One attempt got no 2xx (an HTTP error, a refused address, a timeout): it is tried again. */
  ATTEMPT_FAILED: 'WebhookAttemptFailed',
} as const;

/** The delivery workflow's signature, for those that start it by its type name. */
export type WebhookDeliveryWorkflow = (input: WebhookDeliveryInput) => Promise<WebhookDeliveryResult>;
