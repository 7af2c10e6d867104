import { randomBytes } from 'node:crypto';
import type { PullRequestStatus } from './pull-requests';
import type { RunEventPayloads } from './run-events';

/**
 * Event types a webhook may subscribe to (the trigger of migrations 1763880000000 and
 * 1763979300000 records them): a run's state change; a change of its pull request's status.
 */
export const WEBHOOK_EVENT_TYPES = ['run.state_changed', 'run.pull_request_changed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What a webhook created without `event_types` gets; `run.pull_request_changed` is asked for. */
export const DEFAULT_WEBHOOK_EVENT_TYPES: WebhookEventType[] = ['run.state_changed'];

/** A pull request change as the trigger recorded it: the `pull_request` entry's payload and the branch. */
export type RecordedPullRequestChange = RunEventPayloads['pull_request'] & { branch: string };

/** `pull_request` of a `run.pull_request_changed` delivery. */
export interface WebhookPullRequestChange {
  repository: string;
  url: string;
  branch: string;
  status: PullRequestStatus;
  /** null when the change is its opening. */
  previous_status: PullRequestStatus | null;
}

export function webhookPullRequestChange(recorded: RecordedPullRequestChange): WebhookPullRequestChange {
  return {
    repository: recorded.repository,
    url: recorded.url,
    branch: recorded.branch,
    status: recorded.status,
    previous_status: recorded.opened ? null : (recorded.previous_status ?? null),
  };
}

/**
 * A delivery's progress: `pending` (not tried yet), `failed` (the last attempt failed; it will be
 * tried again), `succeeded` (a 2xx), `given_up` (the retry window ran out).
 */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'failed', 'succeeded', 'given_up'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** A Standard Webhooks signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
