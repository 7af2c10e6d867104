import { Webhook } from 'standardwebhooks';
import type { UrlSigner } from '../../core/signed-urls';
import { toRunItem } from '../../services/views/run-item';
import type { DeliveryToSend } from '../../db/webhook-deliveries';
import type { SecretsKeyring } from '../../core/secrets-keyring';
import { webhookPullRequestChange } from '../../core/webhooks';

/**
 * The body of a delivery: the event type, when the change happened, and the run as
 * `GET /agent/runs/{id}` showed it at that change (built from the row copied when the change was
 * recorded, with `run_time` as of that moment, its `session_link` signed as of then); for a
 * `run.pull_request_changed`, the changed pull request beside it (so that `data` stays the run
 * the official clients parse). The same bytes on every attempt.
 */
export function webhookBody(delivery: DeliveryToSend, sessionLinks: UrlSigner, secretsKeyring: SecretsKeyring): string {
  return JSON.stringify({
    type: delivery.eventType,
    timestamp: delivery.occurredAt.toISOString(),
    data: toRunItem(delivery.run, sessionLinks, secretsKeyring, delivery.artifacts, delivery.occurredAt),
    ...(delivery.pullRequestChange ? { pull_request: webhookPullRequestChange(delivery.pullRequestChange) } : {}),
  });
}

/**
 * Standard Webhooks headers: `webhook-id` (the delivery's id, the same on every attempt, so a
 * receiver can drop repeats), `webhook-timestamp` (this attempt, in seconds) and
 * `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret).
 */
export function webhookHeaders(deliveryId: string, secret: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(deliveryId, at, body),
  };
}
