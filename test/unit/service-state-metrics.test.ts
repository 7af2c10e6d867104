import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serviceStateMetrics, workerCapacityMetrics, type RunQueueSnapshot } from '../../core/metrics';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus-text';

const snapshot: RunQueueSnapshot = {
  waiting: { admission: { runs: 2, oldestSeconds: 40 }, worker: { runs: 3, oldestSeconds: 95.5 } },
  inProgress: 7,
  blocked: 0,
  longestSilenceSeconds: 12,
};

test('the service state: each wait by what it waits for, reads shared between scrapes until they age', async () => {
  let reads = 0;
  let reachable = true;
  const windows: number[] = [];
  const render = serviceStateMetrics(
    {
      runQueue: async () => {
        reads += 1;
        return snapshot;
      },
      keysExpiringWithin: async (seconds) => {
        windows.push(seconds);
        return 4;
      },
      temporalReachable: async () => reachable,
    },
    60_000,
  );
  const [first, second] = await Promise.all([render(), render()]);
  expect(second).toBe(first);
  expect(reads).toBe(1);
  // Keys expiring within a week, read once too.
  expect(windows).toEqual([7 * 86_400]);
  const m = parsePrometheusText(first);
  expect(m.types.get('agent_runs_runs_waiting')).toBe('gauge');
  expect(sampleValue(m, 'agent_runs_runs_waiting', { waiting_for: 'admission' })).toBe(2);
  expect(sampleValue(m, 'agent_runs_runs_waiting', { waiting_for: 'worker' })).toBe(3);
  expect(sampleValue(m, 'agent_runs_runs_waiting_oldest_seconds', { waiting_for: 'worker' })).toBe(95.5);
  expect(sampleValue(m, 'agent_runs_runs_in_progress')).toBe(7);
  expect(sampleValue(m, 'agent_runs_runs_in_progress_longest_silence_seconds')).toBe(12);
  expect(sampleValue(m, 'agent_runs_temporal_reachable')).toBe(1);
  expect(m.types.get('agent_runs_api_keys_expiring_soon')).toBe('gauge');
  expect(sampleValue(m, 'agent_runs_api_keys_expiring_soon')).toBe(4);
  // Within the age, a change is not read yet; a render with no age reads anew.
  reachable = false;
  expect(sampleValue(parsePrometheusText(await render()), 'agent_runs_temporal_reachable')).toBe(1);
  const fresh = serviceStateMetrics(
    { runQueue: async () => snapshot, keysExpiringWithin: async () => 0, temporalReachable: async () => reachable },
    0,
  );
  expect(sampleValue(parsePrometheusText(await fresh()), 'agent_runs_temporal_reachable')).toBe(0);
});

test('without the database, the run and key gauges are left out (not reported as 0); Temporal still is', async () => {
  const render = serviceStateMetrics({
    runQueue: () => Promise.reject(new Error('database unreachable')),
    keysExpiringWithin: () => Promise.reject(new Error('database unreachable')),
    temporalReachable: async () => true,
  });
  const m = parsePrometheusText(await render());
  expect([...m.types.keys()]).toEqual(['agent_runs_temporal_reachable']);
});

test("a worker's room: used and free slots, and its workspace filesystem's free and total bytes", async () => {
  const render = workerCapacityMetrics({
    slots: () => ({ used: 3, capacity: 5 }),
    workspaceDir: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-room-')),
  });
  const m = parsePrometheusText(await render());
  expect(sampleValue(m, 'agent_runs_worker_run_slots', { state: 'used' })).toBe(3);
  expect(sampleValue(m, 'agent_runs_worker_run_slots', { state: 'free' })).toBe(2);
  const free = sampleValue(m, 'agent_runs_worker_workspace_disk_free_bytes');
  expect(free).toBeGreaterThan(0);
  expect(sampleValue(m, 'agent_runs_worker_workspace_disk_size_bytes')).toBeGreaterThanOrEqual(free);

  // A directory that is gone: its disk is left out, the slots stay.
  const gone = workerCapacityMetrics({ slots: () => ({ used: 6, capacity: 5 }), workspaceDir: '/nonexistent/dir' });
  const without = parsePrometheusText(await gone());
  expect([...without.types.keys()]).toEqual(['agent_runs_worker_run_slots']);
  expect(sampleValue(without, 'agent_runs_worker_run_slots', { state: 'free' })).toBe(0);
});
