import { notFound } from '../../core/api-error';
import { isUuid, newUuidV7 } from '../../core/ids';
import { OutboundAddressRules } from '../../core/outbound-addresses';
import { platformEndpoints } from '../../core/platform-endpoints';
import type { CreateWebhookRequest } from '../../core/schemas/webhook-schemas';
import { encryptSecret } from '../../core/secrets';
import { DEFAULT_WEBHOOK_EVENT_TYPES, newWebhookSecret } from '../../core/webhooks';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { deleteWebhook, insertWebhook } from '../../db/webhooks';
import { type Webhook } from '../../db/webhook-reads';
import type { ServiceDeps } from '../service-deps';
import { assertTeamHasRoom } from '../team-caps';
import { checkWebhookUrl } from './webhook-url';

/**
 * A team's webhook subscriptions: a URL that outbound connections may reach, a signing secret
 * shown once, TEAM_MAX_WEBHOOKS. Deliveries are made by the workers (activities/webhook-activities.ts).
 */
export function createWebhookService({ config, dataSource, secretsKeyring }: ServiceDeps) {
  let rules: Promise<OutboundAddressRules> | undefined;
  const addressRules = () =>
    (rules ??= (async () => {
      const built = new OutboundAddressRules(config.network.outboundAllowedPrivateHosts);
      await built.addPlatformEndpoints(platformEndpoints(config));
      return built;
    })());

  return {
    /** Subscribes the team; the answer carries the signing secret, the only time it is shown. */
    async create(
      principal: AuthenticatedPrincipal,
      body: CreateWebhookRequest,
    ): Promise<{ webhook: Webhook; secret: string }> {
      const url = await checkWebhookUrl(body.url, await addressRules());
      const { teamId } = principal;
      const secret = newWebhookSecret();
      const webhook = await dataSource.transaction(async (tx) => {
        await assertTeamHasRoom(tx, 'webhooks', teamId, config.quotas.teamMaxWebhooks);
        return insertWebhook(tx, {
          id: newUuidV7(),
          teamId,
          url,
          eventTypes: [...new Set(body.event_types ?? DEFAULT_WEBHOOK_EVENT_TYPES)],
          encryptedSecret: encryptSecret(secret, secretsKeyring),
          taskQueue: config.temporal.taskQueue,
        });
      });
      return { webhook, secret };
    },

    /** Deletes the team's webhook; 404 when there is none of that id. */
    async delete(principal: AuthenticatedPrincipal, id: string): Promise<void> {
      if (!isUuid(id) || !(await deleteWebhook(dataSource.manager, id, principal.teamId))) {
        throw notFound(`No webhook ${id}.`);
      }
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
