import pg from 'pg';
import { isDependencyDown } from '../core/dependency-errors';
import type { Logger } from '../core/logger';
import { databaseReachable } from '../core/metrics';

const PROBE_INTERVAL_MS = 1000;
const TOO_MANY_CONNECTIONS = '53300';

export type DatabaseState = 'reachable' | 'checking' | 'unreachable';

/**
 * Whether PostgreSQL answers this process. A query or connection that fails for want of the
 * server (a read timeout, a refused or cut connection) makes the gate ask a probe on a fresh
 * connection; when the probe fails too, the database is unreachable: new work is refused at once
 * and work waiting for a connection is let go, instead of each request waiting out its own
 * timeouts, and probes run every second until one answers. A slow query alone never shuts the
 * gate: its probe answers.
 */
export interface DatabaseGate {
  readonly state: DatabaseState;
  /** Tells the gate of a failed query or connection; only outages count. */
  noteFailure(err: unknown): void;
  /** Calls `listener` when the database turns unreachable; returns the unsubscribe. */
  onUnreachable(listener: () => void): () => void;
  /** Stops probing (the DataSource is being destroyed). */
  stop(): void;
}

export function createDatabaseGate(options: {
  databaseUrl: string;
  /** How long a probe may take to connect, and then to answer. */
  probeTimeoutMs: number;
  logger?: Logger;
}): DatabaseGate {
  let state: DatabaseState = 'reachable';
  let unreachableSince = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const listeners = new Set<() => void>();

  const probe = async (): Promise<boolean> => {
    const client = new pg.Client({
      connectionString: options.databaseUrl,
      connectionTimeoutMillis: options.probeTimeoutMs,
      query_timeout: options.probeTimeoutMs,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      // Not awaited: a server that froze just now would never acknowledge the goodbye.
      client.end().catch(() => undefined);
      return true;
    } catch (err) {
      (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      // "Too many clients": the server answers, it is only full, and the pool's own connections work.
      return (err as { code?: unknown }).code === TOO_MANY_CONNECTIONS;
    }
  };

  const becomeReachable = () => {
    if (state === 'unreachable') {
      options.logger?.info('PostgreSQL answers again; database work is accepted', {
        unreachable_ms: Date.now() - unreachableSince,
      });
      databaseReachable.set(1);
    }
    state = 'reachable';
  };

  const probeThen = (ifNoAnswer: () => void) => {
    void probe()
      .catch(() => false)
      .then((answers) => {
        if (stopped) return;
        if (answers) becomeReachable();
        else ifNoAnswer();
      });
  };

  const probeUntilReachable = () => {
    timer = setTimeout(() => probeThen(probeUntilReachable), PROBE_INTERVAL_MS);
    timer.unref();
  };

  const becomeUnreachable = () => {
    state = 'unreachable';
    unreachableSince = Date.now();
    databaseReachable.set(0);
    options.logger?.warn('PostgreSQL is unreachable; database work is refused until a probe answers', {
      probe_interval_ms: PROBE_INTERVAL_MS,
    });
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (err) {
        options.logger?.error('a database waiter failed when let go', { error: err });
      }
    }
    probeUntilReachable();
  };

  return {
    get state() {
      return state;
    },
    noteFailure(err) {
      if (stopped || state !== 'reachable' || !isDependencyDown(err)) return;
      state = 'checking';
      probeThen(becomeUnreachable);
    },
    onUnreachable(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      listeners.clear();
      if (state === 'unreachable') databaseReachable.set(1);
    },
  };
}
