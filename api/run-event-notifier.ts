import { Client } from 'pg';
import { isShuttingDown } from '../core/shutdown-signal';
import type { Logger } from '../core/logger';
import { listenTo, pingDatabase } from '../db/probe-reads';
import { RUN_EVENTS_CHANNEL } from '../db/run-event-reads';

/** How the listening connection shows in `pg_stat_activity` (operators, and the test that cuts it). */
export const LISTENER_APPLICATION_NAME = 'agent-runs-event-listener';

/** Called with the id of a new entry of the run, or with nothing when notifications may have been missed. */
export type Wake = (eventId: bigint | undefined) => void;

export interface RunEventNotifier {
  /**
   * Calls `wake` for every new transcript entry of run `runId` (announced at commit), and with
   * no id after the listening connection (re)connects: what was written meanwhile was announced
   * to nobody. Connects on first use. Returns the unsubscribe.
   */
  subscribe(runId: string, wake: Wake): () => void;
  close(): Promise<void>;
}

export interface RunEventNotifierOptions {
  databaseUrl: string;
  logger: Logger;
  /** First and largest delay between reconnection attempts. */
  retryMs?: { initial: number; max: number };
  /** How often the connection is checked with a query: a frozen server sends no error. */
  probeIntervalMs?: number;
}

/**
 * One connection per API process that LISTENs on the transcript channel (a `pg` Client of its
 * own: a pooled connection would be handed to other queries) and fans each notification out to
 * the process's open event streams of that run. It reconnects with backoff when the connection
 * drops, and then wakes every stream so that each reads again from the last id it sent.
 */
export function createRunEventNotifier(options: RunEventNotifierOptions): RunEventNotifier {
  const { databaseUrl, logger } = options;
  const retry = options.retryMs ?? { initial: 250, max: 10_000 };
  const probeIntervalMs = options.probeIntervalMs ?? 30_000;
  const subscribers = new Map<string, Set<Wake>>();
  let started = false;
  let closed = false;
  let current: Client | undefined;
  let delay = retry.initial;
  let retryTimer: NodeJS.Timeout | undefined;
  let probeTimer: NodeJS.Timeout | undefined;
  let connecting: Promise<void> | undefined;

  const wakeAll = () => {
    for (const wakes of subscribers.values()) for (const wake of wakes) wake(undefined);
  };

  const dispatch = (payload: string | undefined) => {
    // `<run_id>:<id>`, written by the trigger of migration 1763870000000.
    const match = /^([0-9a-f-]{36}):(\d+)$/.exec(payload ?? '');
    if (!match) return;
    const wakes = subscribers.get(match[1]!);
    if (!wakes) return;
    const id = BigInt(match[2]!);
    for (const wake of wakes) wake(id);
  };

  const connect = async (): Promise<void> => {
    const client = new Client({
      connectionString: databaseUrl,
      application_name: LISTENER_APPLICATION_NAME,
      connectionTimeoutMillis: 5000,
      query_timeout: 10_000,
      keepAlive: true,
    });
    let lost = false;
    const onLost = (err: unknown) => {
      if (lost) return;
      lost = true;
      if (current === client) current = undefined;
      client.end().catch(() => undefined);
      if (closed) return;
      const retryInMs = delay;
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        // Said when reconnecting, not when lost: a process shutting down (its PostgreSQL with it)
        // has closed this notifier by then and says nothing.
        if (closed || isShuttingDown()) return;
        // One line: a dropped connection's stack says nothing (PostgreSQL restarting, a network blip).
        logger.warn('event notifications: connection lost, reconnecting', {
          error: err instanceof Error ? err.message : err,
          retried_after_ms: retryInMs,
        });
        connecting = connect();
      }, delay);
      delay = Math.min(delay * 2, retry.max);
    };
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel === RUN_EVENTS_CHANNEL) dispatch(msg.payload);
    });
    try {
      await client.connect();
      await listenTo(client, RUN_EVENTS_CHANNEL);
    } catch (err) {
      onLost(err);
      return;
    }
    if (lost) return;
    if (closed) {
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    delay = retry.initial;
    // Entries written while nothing listened were announced to nobody: every stream reads again.
    wakeAll();
  };

  const probe = () => {
    const client = current;
    if (!client) return;
    pingDatabase(client).catch((err: unknown) => client.emit('error', err));
  };

  const start = () => {
    if (started || closed) return;
    started = true;
    probeTimer = setInterval(probe, probeIntervalMs);
    probeTimer.unref();
    connecting = connect();
  };

  return {
    subscribe(runId, wake) {
      start();
      let wakes = subscribers.get(runId);
      if (!wakes) subscribers.set(runId, (wakes = new Set()));
      wakes.add(wake);
      return () => {
        wakes.delete(wake);
        if (wakes.size === 0 && subscribers.get(runId) === wakes) subscribers.delete(runId);
      };
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      clearInterval(probeTimer);
      subscribers.clear();
      // An attempt under way sees `closed` and ends its connection.
      await connecting;
      const client = current;
      current = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
