import { Client as PgClient } from 'pg';
import { isShuttingDown } from '../core/shutdown-signal';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';
import { startUnstartedDeliveries, type DeliveryStarterDeps } from '../activities/webhooks/start-deliveries';
import { listenTo } from '../db/probe-reads';
import { WEBHOOK_DELIVERIES_CHANNEL } from '../db/webhook-deliveries';

const RECONNECT_MIN_MS = 1000;
const RECONNECT_MAX_MS = 30_000;

export interface WebhookDispatcher {
  stop(): Promise<void>;
}

/**
 * Starts delivery workflows as soon as deliveries are committed: it listens on the channel the
 * delivery trigger notifies at commit, and on each notification (and on each (re)connection, for
 * what it missed meanwhile) starts every unstarted delivery of this task queue. A notification
 * lost anyway (no worker listening, a crash between commit and start) is left to the sweep.
 */
export function startWebhookDispatcher(deps: DeliveryStarterDeps): WebhookDispatcher {
  const { logger } = deps;
  const url = (deps.dataSource.options as PostgresConnectionOptions).url;
  let stopped = false;
  let client: PgClient | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let reconnectDelay = RECONNECT_MIN_MS;
  let draining: Promise<void> | undefined;
  let again = false;

  const drain = (): void => {
    if (stopped) return;
    if (draining) {
      again = true;
      return;
    }
    draining = (async () => {
      do {
        again = false;
        await startUnstartedDeliveries(deps).catch((err: unknown) =>
          logger.warn('could not start webhook deliveries; the sweep will', { error: err }),
        );
      } while (again && !stopped);
    })().finally(() => {
      draining = undefined;
    });
  };

  const reconnectLater = (err?: Error) => {
    if (stopped || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      // Said when reconnecting, not when lost: a worker shutting down (its PostgreSQL with it)
      // has stopped the dispatcher by then and says nothing.
      if (stopped || isShuttingDown()) return;
      // One line: a dropped connection's stack says nothing (PostgreSQL restarting, a network blip).
      logger.warn('lost the webhook notification connection; reconnecting', { error: err?.message });
      void connect();
    }, reconnectDelay);
    reconnectDelay = Math.min(reconnectDelay * 2, RECONNECT_MAX_MS);
  };

  async function connect(): Promise<void> {
    const pg = new PgClient({ connectionString: url });
    client = pg;
    const lost = (err?: Error) => {
      if (client !== pg) return;
      client = undefined;
      void pg.end().catch(() => undefined);
      reconnectLater(err);
    };
    pg.on('error', lost);
    pg.on('end', () => lost());
    pg.on('notification', drain);
    try {
      await pg.connect();
      await listenTo(pg, WEBHOOK_DELIVERIES_CHANNEL);
      reconnectDelay = RECONNECT_MIN_MS;
      drain();
    } catch (err) {
      lost(err as Error);
    }
  }

  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(reconnectTimer);
      const pg = client;
      client = undefined;
      // Not awaited: a frozen database would hold the worker's shutdown.
      void pg?.end().catch(() => undefined);
      await draining;
    },
  };
}
