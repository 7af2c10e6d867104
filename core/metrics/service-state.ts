import { Gauge, Registry } from 'prom-client';

/**
 * The service's state as its database and Temporal show it, the same from every API: runs
 * waiting (for admission, for a worker) and how long, runs gone silent, Temporal's reachability. Served by the API alone
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
  /** The longest any INPROGRESS run on a workspace (not waiting for child runs) has gone without a transcript entry. */
  longestSilenceSeconds: number;
}

export interface ServiceStateSources {
  /** Throws when the database cannot tell: the run gauges are then left out of the scrape. */
  runQueue: () => Promise<RunQueueSnapshot>;
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
  const silence = new Gauge({
    name: 'agent_runs_runs_in_progress_longest_silence_seconds',
    help: 'The longest time any INPROGRESS run on a workspace (not waiting for its child runs) has gone without a new transcript entry: a stuck run.',
    registers: [runs],
  });
  const temporal = new Registry();
  const reachable = new Gauge({
    name: 'agent_runs_temporal_reachable',
    help: 'Whether Temporal answered this API for its namespace (1) or not within 3 s (0): creates, follow-ups and cancels need it.',
    registers: [temporal],
  });
  return async (): Promise<string> => {
    const [snapshot, answers] = await Promise.all([runQueue().catch(() => undefined), temporalReachable()]);
    reachable.set(answers ? 1 : 0);
    if (!snapshot) return temporal.metrics();
    for (const waitingFor of WAITING_FOR) {
      waiting.set({ waiting_for: waitingFor }, snapshot.waiting[waitingFor].runs);
      oldest.set({ waiting_for: waitingFor }, snapshot.waiting[waitingFor].oldestSeconds);
    }
    inProgress.set(snapshot.inProgress);
    silence.set(snapshot.longestSilenceSeconds);
    return `${await runs.metrics()}\n${await temporal.metrics()}`;
  };
}
