import { dataLifecycleMetrics, refreshedInBackground, TEAM_STORAGE_TEAMS, type TeamStorage } from '../../core/metrics';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus-text';

/** Resolves once `condition` holds, checking after each turn of the event loop (a deadline, never a fixed sleep). */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('a background read answers at once: nothing before its first read, then the last value until it ages', async () => {
  let reads = 0;
  let release: (value: number) => void = () => undefined;
  const read = refreshedInBackground(() => {
    reads += 1;
    return new Promise<number>((resolve) => (release = resolve));
  }, 60_000);
  expect(read()).toBeUndefined();
  expect(read()).toBeUndefined();
  expect(reads).toBe(1);
  release(42);
  await until(() => read() === 42);
  expect(reads).toBe(1);
  const failing = refreshedInBackground(() => Promise.reject(new Error('database unreachable')), 60_000, 0);
  failing();
  await new Promise((resolve) => setImmediate(resolve));
  expect(failing()).toBeUndefined();
});

test('team storage: the largest teams by id and name, the rest together; a team that drops out of them is no longer a series', async () => {
  let storage: TeamStorage = {
    largest: [
      { teamId: 't1', team: 'acme', bytes: 3000 },
      { teamId: 't2', team: 'globex', bytes: 1000 },
    ],
    othersBytes: 17,
  };
  const limits: number[] = [];
  const render = dataLifecycleMetrics(
    {
      teamStorage: async (limit) => {
        limits.push(limit);
        return storage;
      },
      oldestEndedRunSeconds: async () => 86_400 * 31,
    },
    { storage: 0, retention: 0 },
  );
  // The first scrape starts the read; the storage is served from the next one.
  const first = parsePrometheusText(await render());
  expect([...first.types.keys()]).toEqual(['agent_runs_runs_ended_oldest_seconds']);
  expect(sampleValue(first, 'agent_runs_runs_ended_oldest_seconds')).toBe(86_400 * 31);
  await until(() => limits.length === 1);
  await new Promise((resolve) => setImmediate(resolve));
  const m = parsePrometheusText(await render());
  expect(limits[0]).toBe(TEAM_STORAGE_TEAMS);
  expect(m.types.get('agent_runs_team_storage_bytes')).toBe('gauge');
  expect(sampleValue(m, 'agent_runs_team_storage_bytes', { team_id: 't1', team: 'acme' })).toBe(3000);
  expect(sampleValue(m, 'agent_runs_team_storage_bytes', { team_id: 't2', team: 'globex' })).toBe(1000);
  expect(sampleValue(m, 'agent_runs_team_storage_other_teams_bytes')).toBe(17);

  // The scrape after a change starts the read of it (this one had no age), the next shows it.
  storage = { largest: [{ teamId: 't2', team: 'globex', bytes: 5000 }], othersBytes: 3017 };
  await render();
  await until(() => limits.length === 3);
  await new Promise((resolve) => setImmediate(resolve));
  const text = await render();
  expect(text).not.toContain('acme');
  expect(
    sampleValue(parsePrometheusText(text), 'agent_runs_team_storage_bytes', { team_id: 't2', team: 'globex' }),
  ).toBe(5000);
});

test('without the database, both are left out of the scrape, not reported as 0', async () => {
  const render = dataLifecycleMetrics({
    teamStorage: () => Promise.reject(new Error('database unreachable')),
    oldestEndedRunSeconds: () => Promise.reject(new Error('database unreachable')),
  });
  await render();
  await new Promise((resolve) => setImmediate(resolve));
  expect(await render()).toBe('');
});
