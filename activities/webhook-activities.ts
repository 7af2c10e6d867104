import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { Config } from '../core/config';
import type { Logger } from '../core/logger';
import { observeWebhookAttempt, observeWebhookGivenUp, type WebhookAttemptOutcome } from '../core/metrics';
import type { OutboundAddressRules } from '../core/outbound-addresses';
import { decryptSecret } from '../core/secrets';
import { urlSigningKeys } from '../core/signed-urls';
import { sessionLinkSigner } from '../services/views/run-item';
import {
  loadDeliveryToSend,
  markDeliveryGivenUp,
  pruneDeliveryLog,
  recordDeliveryAttempt,
  type AttemptOutcome,
} from '../db/webhook-deliveries';
import { WebhookFailureType, type WebhookDeliveryResult, type WebhookSweepResult } from '../workflows/webhook-contract';
import { guardedFetch, OutboundRefusedError } from './tools/guarded-fetch';
import { startUnstartedDeliveries } from './webhooks/start-deliveries';
import { webhookBody, webhookHeaders } from './webhooks/webhook-request';
import type { SecretsKeyring } from '../core/secrets-keyring';

export interface WebhookActivityDeps {
  dataSource: DataSource;
  config: Config;
  logger: Logger;
  /** Starts delivery workflows (the sweep). */
  temporal: Client;
  /** Decrypts the signing secrets, and masks MCP credentials in the run as every endpoint does. */
  secretsKeyring: SecretsKeyring;
  /** The rules of MCP URLs: public addresses, plus what the operator allows, never the platform's own. */
  outboundRules: OutboundAddressRules;
}

/** Most of a failure's text kept in the delivery log. */
const ERROR_CHARS = 300;

/** Most finished deliveries (and spent events) one sweep removes from the log. */
const PRUNE_BATCH = 1000;

/** The activities of webhook deliveries; they run on the webhooks queue (workflows/webhook-contract.ts). */
export function createWebhookActivities(deps: WebhookActivityDeps) {
  const { dataSource, config, secretsKeyring } = deps;
  const sessionLinks = sessionLinkSigner(config, urlSigningKeys(secretsKeyring));
  // Every connection, to the URL's host or anywhere else, is checked when it is made.
  const fetchChecked = guardedFetch(deps.outboundRules);

  /** One POST; never throws: what happened is the outcome. Nothing of the response but its status is read. */
  async function post(url: string, headers: Record<string, string>, body: string, timeoutSeconds: number) {
    const at = new Date();
    const started = performance.now();
    const outcome = (fields: Omit<AttemptOutcome, 'at' | 'durationMs'>): AttemptOutcome => ({
      at,
      durationMs: performance.now() - started,
      ...fields,
    });
    try {
      const res = await fetchChecked(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'agent-runs-webhooks/1', ...headers },
        body,
        // A redirect is not followed: the signed body goes only where the webhook says.
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutSeconds * 1000),
      });
      await res.body?.cancel().catch(() => undefined);
      const redirected = res.status === 0 || (res.status >= 300 && res.status < 400);
      observeWebhookAttempt(
        res.status >= 200 && res.status < 300 ? 'delivered' : redirected ? 'redirect' : 'http_error',
      );
      if (res.status >= 200 && res.status < 300) return outcome({ ok: true, httpStatus: res.status });
      return outcome({
        ok: false,
        ...(res.status ? { httpStatus: res.status } : {}),
        error: redirected
          ? `HTTP ${res.status}: redirects are not followed; give the webhook its final URL`
          : `HTTP ${res.status}`,
      });
    } catch (err) {
      observeWebhookAttempt(failureKind(err));
      return outcome({ ok: false, error: describeFailure(err, timeoutSeconds).slice(0, ERROR_CHARS) });
    }
  }

  return {
    /**
     * One attempt of a delivery: signs the event's body afresh (a new `webhook-timestamp`), POSTs
     * it and records the outcome in the delivery log. A 2xx finishes it; anything else throws, and
     * Temporal tries again after its backoff. A delivery that is gone (its webhook deleted) ends
     * without sending.
     */
    async deliverWebhook(input: { deliveryId: string; timeoutSeconds: number }): Promise<WebhookDeliveryResult> {
      const delivery = await loadDeliveryToSend(dataSource.manager, input.deliveryId);
      if (!delivery) return 'gone';
      if (delivery.status === 'succeeded' || delivery.status === 'given_up') return delivery.status;
      let outcome: AttemptOutcome;
      try {
        const body = webhookBody(delivery, sessionLinks, secretsKeyring);
        const secret = decryptSecret(delivery.encryptedSecret, secretsKeyring);
        const at = new Date();
        outcome = await post(delivery.url, webhookHeaders(delivery.id, secret, at, body), body, input.timeoutSeconds);
      } catch (err) {
        // The request could not be made (a secret stored under a key no longer configured: the message names it).
        observeWebhookAttempt('unsendable');
        outcome = { at: new Date(), durationMs: 0, ok: false, error: (err as Error).message.slice(0, ERROR_CHARS) };
      }
      if (!(await recordDeliveryAttempt(dataSource.manager, delivery.id, outcome))) return 'gone';
      if (!outcome.ok) {
        throw ApplicationFailure.retryable(
          `Delivery ${delivery.id} to ${delivery.url} failed: ${outcome.error}`,
          WebhookFailureType.ATTEMPT_FAILED,
        );
      }
      return 'succeeded';
    },

    /** The retry window ran out without a 2xx. */
    async markWebhookDeliveryGivenUp(input: { deliveryId: string; reason: string }): Promise<void> {
      if (await markDeliveryGivenUp(dataSource.manager, input.deliveryId, input.reason)) observeWebhookGivenUp();
    },

    /**
     * The sweep: starts the workflows of deliveries nobody started (no worker was listening when
     * they were recorded, or one died between recording and starting), and prunes the log.
     */
    async sweepWebhookDeliveries(): Promise<WebhookSweepResult> {
      const started = await startUnstartedDeliveries(deps);
      const pruned = await pruneDeliveryLog(dataSource.manager, config.webhooks.logRetentionDays, PRUNE_BATCH);
      if (started > 0) deps.logger.info('the webhook sweep started deliveries nobody had started', { started });
      return { started, pruned };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

/** What kind of failure a POST that got no response had, as the attempts metric counts it. */
function failureKind(err: unknown): WebhookAttemptOutcome {
  const e = err as { name?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  return e.cause instanceof OutboundRefusedError ? 'refused' : 'network_error';
}

/** What went wrong with a POST that got no response, in words for the delivery log. */
function describeFailure(err: unknown, timeoutSeconds: number): string {
  const e = err as { name?: string; message?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no response within ${timeoutSeconds} s`;
  const cause = e.cause as { code?: string; message?: string } | undefined;
  if (cause instanceof OutboundRefusedError) return cause.message;
  if (cause?.message) return cause.code ? `${cause.code}: ${cause.message}` : cause.message;
  return e.message ?? String(err);
}
