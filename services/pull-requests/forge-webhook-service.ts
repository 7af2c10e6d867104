import type { DataSource } from 'typeorm';
import { ApiError, invalid } from '../../core/api-error';
import {
  FORGE_WEBHOOK_CHALLENGE,
  forgeEventName,
  forgeSigned,
  readForgeWebhook,
  webhookHost,
  type ForgeWebhookReading,
} from '../../core/forge-webhooks';
import type { ForgeKind } from '../../core/git-forges';
import { recordForgePullRequestStatus } from '../../db/pull-request-events';

export type ForgeWebhookOutcome =
  { result: 'recorded'; matched: number; changed: number } | { result: 'ignored'; reason: string };

const unsigned = () =>
  new ApiError(
    'authentication_required',
    "The webhook is not signed with this host's secret in FORGE_WEBHOOK_SECRETS: check the forge webhook's secret.",
    { headers: { 'WWW-Authenticate': FORGE_WEBHOOK_CHALLENGE } },
  );

/**
 * A forge's webhook, verified with the secret of the host its repository is on (nothing is
 * read from an unverified body but that host): a pull request's status is recorded on every
 * run's row of it (db/pull-request-events.ts, one transaction); another event, or a pull request
 * no run delivered, changes nothing.
 */
export function createForgeWebhookService(deps: { dataSource: DataSource; secrets: Readonly<Record<string, string>> }) {
  return {
    async receive(kind: ForgeKind, headers: Record<string, string | string[] | undefined>, raw: Buffer) {
      const payload = parseJson(raw);
      const host = payload === undefined ? undefined : webhookHost(kind, payload);
      const secret = host !== undefined && Object.hasOwn(deps.secrets, host) ? deps.secrets[host] : undefined;
      if (secret === undefined || !forgeSigned(kind, headers, raw, secret)) throw unsigned();
      const reading: ForgeWebhookReading = readForgeWebhook(kind, forgeEventName(kind, headers), payload);
      if (reading.kind === 'malformed')
        throw invalid(`The webhook's body is not what ${kind} sends: ${reading.reason}.`);
      if (reading.kind === 'ignored') return { result: 'ignored', reason: reading.reason } as ForgeWebhookOutcome;
      const { status, ...key } = reading.event;
      const counts = await deps.dataSource.transaction((tx) =>
        recordForgePullRequestStatus(tx, key, status, 'forge_webhook'),
      );
      return { result: 'recorded', ...counts } as ForgeWebhookOutcome;
    },
  };
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
