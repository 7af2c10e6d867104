import { createRun, waitForState } from './helpers/runs';
import { parsePrometheusText, sampleValue, type Exposition } from './helpers/prometheus-text';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * The gauges that say when to add a worker and when a run is stuck, against real runs: a worker
 * with one run slot works on a run whose model call is held; another run of the same team
 * waits for admission (TEAM_MAX_CONCURRENT_RUNS=1), a run of another team is admitted and waits
 * for a worker. The API reports both waits and the silent run; the worker reports its slot
 * used and its disk; once the held call answers, everything runs and the slot frees.
 * Other test files share the database, so the API's gauges are asserted as lower bounds.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { TEAM_MAX_CONCURRENT_RUNS: '1', WORKER_MAX_CONCURRENT_RUNS: '1' } });
}, 90_000);
afterAll(async () => {
  await ctx?.close();
});

async function scrapeApi(): Promise<Exposition> {
  const res = await ctx.api.get('/metrics');
  expect(res.status).toBe(200);
  return parsePrometheusText(res.text);
}

const worker = async () => parsePrometheusText(await ctx.workerMetrics());

test('runs waiting for admission and for a worker, a silent run, and the worker slot it holds', async () => {
  const first = await ctx.newTeamKey();
  const second = await ctx.newTeamKey();
  const marker = uniqueName('capacity');
  let answer!: () => void;
  const held = new Promise<void>((resolve) => (answer = resolve));
  ctx.model.script(`Held ${marker}`, async () => {
    await held;
    return { text: 'done' };
  });
  ctx.model.script(`Next ${marker}`, () => ({ text: 'done' }));
  ctx.model.script(`Other ${marker}`, () => ({ text: 'done' }));

  const working = await createRun(ctx, first.key, { prompt: `Held ${marker}` });
  await ctx.model.waitForCalls(`Held ${marker}`, 1);
  const forAdmission = await createRun(ctx, first.key, { prompt: `Next ${marker}` });
  const forWorker = await createRun(ctx, second.key, { prompt: `Other ${marker}` });
  const createdAt = Date.now();
  await waitForState(ctx, first.key, forAdmission, ['QUEUED']);
  await waitForState(ctx, second.key, forWorker, ['INPROGRESS']);

  // Past two seconds, so that each wait (and the held run's silence) has visibly grown.
  const waited = () => (Date.now() - createdAt) / 1000;
  const api = await waitFor(
    scrapeApi,
    (m) =>
      waited() > 2 &&
      sampleValue(m, 'agent_runs_runs_waiting_oldest_seconds', { waiting_for: 'admission' }) >= 2 &&
      sampleValue(m, 'agent_runs_runs_waiting_oldest_seconds', { waiting_for: 'worker' }) >= 2 &&
      sampleValue(m, 'agent_runs_runs_in_progress_longest_silence_seconds') >= 2,
    'the API to report both waits and the silent run',
    60_000,
  );
  expect(api.types.get('agent_runs_runs_waiting')).toBe('gauge');
  expect(sampleValue(api, 'agent_runs_runs_waiting', { waiting_for: 'admission' })).toBeGreaterThanOrEqual(1);
  expect(sampleValue(api, 'agent_runs_runs_waiting', { waiting_for: 'worker' })).toBeGreaterThanOrEqual(1);
  expect(sampleValue(api, 'agent_runs_runs_in_progress')).toBeGreaterThanOrEqual(2);
  expect(sampleValue(api, 'agent_runs_temporal_reachable')).toBe(1);
  // A worker's room is its own: an API alone reports none.
  expect(api.types.has('agent_runs_worker_run_slots')).toBe(false);
  expect(api.types.has('agent_runs_worker_workspace_disk_free_bytes')).toBe(false);

  const busy = await worker();
  expect(sampleValue(busy, 'agent_runs_worker_run_slots', { state: 'used' })).toBe(1);
  expect(sampleValue(busy, 'agent_runs_worker_run_slots', { state: 'free' })).toBe(0);
  const free = sampleValue(busy, 'agent_runs_worker_workspace_disk_free_bytes');
  expect(free).toBeGreaterThan(0);
  expect(sampleValue(busy, 'agent_runs_worker_workspace_disk_size_bytes')).toBeGreaterThanOrEqual(free);

  answer();
  await waitForState(ctx, first.key, working, ['SUCCEEDED'], undefined, 60_000);
  await waitForState(ctx, first.key, forAdmission, ['SUCCEEDED'], undefined, 60_000);
  await waitForState(ctx, second.key, forWorker, ['SUCCEEDED'], undefined, 60_000);
  const idle = await waitFor(
    worker,
    (m) => sampleValue(m, 'agent_runs_worker_run_slots', { state: 'free' }) === 1,
    'the slot to free',
    60_000,
  );
  expect(sampleValue(idle, 'agent_runs_worker_run_slots', { state: 'used' })).toBe(0);
}, 240_000);
