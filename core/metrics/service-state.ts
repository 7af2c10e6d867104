import { Gauge, Registry } from 'prom-client';

/**
 * The service's state as its database and Temporal show it, the same from every API: runs
 * waiting (for admission, for a worker) and how long, runs gone silent, API keys about to expire,
 * Temporal's reachability. Served by the API alone
 * (`GET /metrics`; a worker never), each read at most once per SERVICE_STATE_MAX_AGE_MS
 * however often it is scraped. Every API serves the same values: take `max` over them, not `sum`.
 */

export const SERVICE_STATE_MAX_AGE_MS = 10_000;

/**
 * What an unfinished run waits for: admission (QUEUED: its team is at TEAM_MAX_CONCURRENT_RUNS)
 * or a worker (INPROGRESS, admitted, with no workspace yet: no worker has a free run slot).
 */
export const WAITING_FOR = ['admission', 'worker'] as const;
export type WaitingFor = (typeof WAITING_FOR)[number];

export interface RunQueueSnapshot {
  waiting: Record<WaitingFor, { runs: number; oldestSeconds: number }>;
  inProgress: number;
  /** Runs BLOCKED: a call of their agent waits for a person's decision (they hold no slot meanwhile). */
  blocked: number;
  /** The longest any INPROGRESS run on a workspace (not waiting for child runs) has gone without a transcript entry. */
  longestSilenceSeconds: number;
}

/** An API key that expires within this many seconds counts as expiring soon: a week to rotate it. */
export const KEY_EXPIRY_WARNING_SECONDS = 7 * 86_400;

export interface ServiceStateSources {
  /** Throws when the database cannot tell: the run gauges are then left out of the scrape. */
  runQueue: () => Promise<RunQueueSnapshot>;
  /** Active keys (not revoked, not replaced by a rotation) expiring within `seconds`; throws as runQueue does. */
  keysExpiringWithin: (seconds: number) => Promise<number>;
  temporalReachable: () => Promise<boolean>;
}

/** `read`, at most once per `maxAgeMs`: concurrent and repeated callers share one answer. */
export function cachedRead<T>(read: () => Promise<T>, maxAgeMs: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= maxAgeMs) last = { at: now, value: read() };
    return last.value;
  };
}

/** The Prometheus text of the service's state, for the API's `GET /metrics` to append to its own. */
export function serviceStateMetrics(sources: ServiceStateSources, maxAgeMs = SERVICE_STATE_MAX_AGE_MS) {
  const runQueue = cachedRead(sources.runQueue, maxAgeMs);
  const temporalReachable = cachedRead(sources.temporalReachable, maxAgeMs);
  const keysExpiring = cachedRead(() => sources.keysExpiringWithin(KEY_EXPIRY_WARNING_SECONDS), maxAgeMs);
  const runs = new Registry();
  const waiting = new Gauge({
    name: 'agent_runs_runs_waiting',
    help: 'Unfinished runs waiting, by what for: admission (QUEUED, their team at TEAM_MAX_CONCURRENT_RUNS) or worker (INPROGRESS without a workspace yet: no worker has a free run slot).',
    labelNames: ['waiting_for'] as const,
    registers: [runs],
  });
  const oldest = new Gauge({
    name: 'agent_runs_runs_waiting_oldest_seconds',
    help: 'How long the longest-waiting run has waited (0 when none waits), by what for; waiting_for="worker" is the signal to add workers.',
    labelNames: ['waiting_for'] as const,
    registers: [runs],
  });
  const inProgress = new Gauge({ name: 'agent_runs_runs_in_progress', help: 'Runs INPROGRESS.', registers: [runs] });
  const blocked = new Gauge({
    name: 'agent_runs_runs_blocked',
    help: "Runs BLOCKED: a call of their agent waits for a person's approval or answer (they hold no team slot and no worker slot meanwhile).",
    registers: [runs],
  });
  const silence = new Gauge({
    name: 'agent_runs_runs_in_progress_longest_silence_seconds',
    help: 'The longest time any INPROGRESS run on a workspace (not waiting for its child runs) has gone without a new transcript entry: a stuck run.',
    registers: [runs],
  });
  const keys = new Registry();
  const expiringSoon = new Gauge({
    name: 'agent_runs_api_keys_expiring_soon',
    help: 'API keys that expire within the next 7 days, not revoked and not replaced by a rotation: rotate them (npm run keys -- list shows which).',
    registers: [keys],
  });
  const temporal = new Registry();
  const reachable = new Gauge({
    name: 'agent_runs_temporal_reachable',
    help: 'Whether Temporal answered this API for its namespace (1) or not within 3 s (0): creates, follow-ups and cancels need it.',
    registers: [temporal],
  });
  return async (): Promise<string> => {
    const [snapshot, expiring, answers] = await Promise.all([
      runQueue().catch(() => undefined),
      keysExpiring().catch(() => undefined),
      temporalReachable(),
    ]);
    reachable.set(answers ? 1 : 0);
    const parts: Promise<string>[] = [];
    if (snapshot) {
      for (const waitingFor of WAITING_FOR) {
        waiting.set({ waiting_for: waitingFor }, snapshot.waiting[waitingFor].runs);
        oldest.set({ waiting_for: waitingFor }, snapshot.waiting[waitingFor].oldestSeconds);
      }
      inProgress.set(snapshot.inProgress);
      blocked.set(snapshot.blocked);
      silence.set(snapshot.longestSilenceSeconds);
      parts.push(runs.metrics());
    }
    if (expiring !== undefined) {
      expiringSoon.set(expiring);
      parts.push(keys.metrics());
    }
    parts.push(temporal.metrics());
    return (await Promise.all(parts)).join('\n');
  };
}
