import { Gauge, Registry } from 'prom-client';
import { cachedRead, SERVICE_STATE_MAX_AGE_MS } from './service-state';

/**
 * What the service keeps, as its database shows it (docs/operations.md, "Data lifecycle"): the
 * bytes of runs' files of the teams that store most, and how long ago the oldest run kept ended
 * (retention at work keeps it under RUN_RETENTION_DAYS). Served by the API alone, like the
 * service state, and the same from every API.
 */

/**
 * Teams the storage gauge names: the ones that store most, so that the series stay this many
 * however many teams there are (an operator's teams, yet a label to bound all the same).
 */
export const TEAM_STORAGE_TEAMS = 20;

/** The per-team storage is one pass over every checkpoint and file row: read at most this often. */
export const TEAM_STORAGE_MAX_AGE_MS = 5 * 60_000;

export interface TeamStorage {
  largest: { teamId: string; team: string; bytes: number }[];
  /** The teams after the largest, together. */
  othersBytes: number;
}

export interface DataLifecycleSources {
  /** The `limit` teams that store most, and the others' bytes; throws when the database cannot tell. */
  teamStorage: (limit: number) => Promise<TeamStorage>;
  /** Seconds since the run that ended longest ago (of those kept) ended, 0 when none; throws as teamStorage does. */
  oldestEndedRunSeconds: () => Promise<number>;
}

/**
 * `read` refreshed behind the callers' backs: each call answers the last value read at once
 * (undefined before the first read finished, or after a read failed) and starts a new read when
 * that one is `maxAgeMs` old (`retryMs` after a failed one) and none is under way. A slow read
 * never holds up a scrape.
 */
export function refreshedInBackground<T>(
  read: () => Promise<T>,
  maxAgeMs: number,
  retryMs = SERVICE_STATE_MAX_AGE_MS,
): () => T | undefined {
  let value: T | undefined;
  let nextReadAt = 0;
  let reading = false;
  return () => {
    if (!reading && Date.now() >= nextReadAt) {
      reading = true;
      const startedAt = Date.now();
      void read()
        .then(
          (read) => {
            value = read;
            nextReadAt = startedAt + maxAgeMs;
          },
          () => {
            value = undefined;
            nextReadAt = startedAt + retryMs;
          },
        )
        .finally(() => (reading = false));
    }
    return value;
  };
}

/** The Prometheus text of what the service keeps, for the API's `GET /metrics` to append to its own. */
export function dataLifecycleMetrics(
  sources: DataLifecycleSources,
  maxAgeMs = { storage: TEAM_STORAGE_MAX_AGE_MS, retention: SERVICE_STATE_MAX_AGE_MS },
) {
  const teamStorage = refreshedInBackground(() => sources.teamStorage(TEAM_STORAGE_TEAMS), maxAgeMs.storage);
  const oldestEnded = cachedRead(sources.oldestEndedRunSeconds, maxAgeMs.retention);
  const storage = new Registry();
  const teamBytes = new Gauge({
    name: 'agent_runs_team_storage_bytes',
    help: `Bytes of runs' files a team keeps in the object store (what its checkpoints and files stored anew; TEAM_MAX_STORAGE_BYTES caps it), for the ${TEAM_STORAGE_TEAMS} teams that keep most, read every 5 minutes.`,
    labelNames: ['team_id', 'team'] as const,
    registers: [storage],
  });
  const othersBytes = new Gauge({
    name: 'agent_runs_team_storage_other_teams_bytes',
    help: `The same bytes for every team after the ${TEAM_STORAGE_TEAMS} of agent_runs_team_storage_bytes, together.`,
    registers: [storage],
  });
  const retention = new Registry();
  const oldest = new Gauge({
    name: 'agent_runs_runs_ended_oldest_seconds',
    help: 'How long ago the run that ended longest ago, of the runs kept, ended (0 when none has): with RUN_RETENTION_DAYS it stays below that many days and an hour, unless a descendant that ended later keeps its tree.',
    registers: [retention],
  });
  return async (): Promise<string> => {
    const parts: Promise<string>[] = [];
    const stored = teamStorage();
    if (stored) {
      teamBytes.reset();
      for (const t of stored.largest) teamBytes.set({ team_id: t.teamId, team: t.team }, t.bytes);
      othersBytes.set(stored.othersBytes);
      parts.push(storage.metrics());
    }
    const seconds = await oldestEnded().catch(() => undefined);
    if (seconds !== undefined) {
      oldest.set(seconds);
      parts.push(retention.metrics());
    }
    return (await Promise.all(parts)).join('\n');
  };
}
