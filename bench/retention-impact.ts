/**
 * Benchmark of retention's cost to the API: seeds N ended runs that are past RUN_RETENTION_DAYS
 * (30) and M recent ones (kept) through SQL, with what runs leave (db/ended-run-seed.ts: a
 * transcript, checkpoints, files, follow-ups, lineage), over 51 teams (one holds 40 %). Then it
 * asks `GET /agent/runs` of that big team, one request after the other: first with nothing else
 * going on, then while retention deletes the N runs in its batches (the maintenance activity in a
 * process of its own, as on a worker: bench/retention-deleter.ts), paused 5 s after every 10 s so
 * that the requests with and without it see the same machine. Prints p50/p99 of each, the
 * deletion's throughput and time, and whether p99 while it deletes stays within 2x of p99 while
 * it is paused.
 * Usage: npm run bench:retention -- [expired=100000] [kept=20000] [requests before=2000]
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { closeServer } from '../api/server';
import { createLogger } from '../core/logger';
import { connectTemporalClient } from '../infra/connections';
import { countRunsEndedSince, insertBenchTeams, seedEndedRuns } from '../db/ended-run-seed';
import { percentile, serveBenchApi, startBenchStack, type BenchStack } from './bench-stack';

const ROOT = path.resolve(__dirname, '..');
const RETENTION_DAYS = 30;
/** Runs per seeding transaction. */
const SEED_BATCH = 10_000;
/** The turns of retention running and paused (shorter: the deletion's time is what takes long), and the start of each that counts for neither. */
const RUNNING_MS = 10_000;
const PAUSED_MS = 5_000;
const SETTLE_MS = 500;

const log = (m: string) => process.stdout.write(`${m}\n`);
const figures = (name: string, ms: number[]) =>
  `${name.padEnd(34)} ${String(ms.length).padStart(6)} requests   p50 ${percentile(ms, 50).toFixed(1).padStart(6)} ms   p99 ${percentile(ms, 99).toFixed(1).padStart(6)} ms`;

async function seed(stack: BenchStack, teamIds: string[], creatorUid: string, expired: number, kept: number) {
  const started = Date.now();
  const batches: [string, number, [number, number]][] = [
    ['expired', expired, [RETENTION_DAYS + 1, 120]],
    ['kept', kept, [0, RETENTION_DAYS - 2]],
  ];
  for (const [label, count, endedDaysAgo] of batches) {
    for (let from = 1; from <= count; from += SEED_BATCH) {
      const to = Math.min(count, from + SEED_BATCH - 1);
      await seedEndedRuns(stack.dataSource.manager, { label, from, to, teamIds, creatorUid, endedDaysAgo });
      process.stdout.write(`  seeded ${label} runs ${to}/${count}\r`);
    }
    process.stdout.write('\n');
  }
  // As autovacuum leaves tables in steady state: statistics and the visibility map.
  await stack.dataSource.query('VACUUM ANALYZE');
  log(`seeded in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

type RetentionTotals = { deleted: number; calls: number; seconds: number };

/**
 * Retention in a process of its own, which `pause` holds between two activity calls and `resume`
 * lets go on; `done` resolves with its totals (its time paused left out) once it has deleted every
 * expired run.
 */
function startRetention(stack: BenchStack) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/retention-deleter.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
      AGENT_RUNS_DATA_DIR: stack.config.dataDir,
      RUN_RETENTION_DAYS: String(RETENTION_DAYS),
      LOG_LEVEL: 'error',
    },
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const done = new Promise<RetentionTotals>((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trimEnd().split('\n').pop()!) as RetentionTotals)
        : reject(new Error(`retention exited with ${code}`)),
    ),
  );
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exit.then(() => (exited = true));
  /** Resolves once retention is between two activity calls and waits (or has ended). */
  const pause = async () => {
    if (exited) return;
    const paused = new Promise<void>((resolve) => child.once('message', () => resolve()));
    child.send('pause');
    await Promise.race([paused, exit]);
  };
  const resume = () => {
    if (!exited) child.send('resume');
  };
  return { done, pause, resume };
}

/**
 * Requests one after the other until retention is done, in windows that take turns: retention
 * running (RUNNING_MS), retention paused (PAUSED_MS). Turns rather than one stretch before and one during, so
 * that what else the machine does (it is shared) weighs on both alike. Requests that start within
 * SETTLE_MS of a turn count for neither (a pause begins once retention is between two calls).
 */
async function measureInTurns(time: () => Promise<number>, retention: ReturnType<typeof startRetention>) {
  const running: number[] = [];
  const paused: number[] = [];
  let finished = false;
  const totals = retention.done.finally(() => (finished = true));
  let isRunning = true;
  let windowStart = performance.now();
  let reportedAt = windowStart;
  while (!finished) {
    const start = performance.now();
    if (start - windowStart >= (isRunning ? RUNNING_MS : PAUSED_MS)) {
      if (isRunning) await retention.pause();
      else retention.resume();
      isRunning = !isRunning;
      windowStart = performance.now();
      continue;
    }
    const ms = await time();
    if (start - windowStart >= SETTLE_MS) (isRunning ? running : paused).push(ms);
    if (start - reportedAt > 60_000) {
      reportedAt = start;
      log(`  ${running.length + paused.length} requests so far`);
    }
  }
  return { running, paused, totals: await totals };
}

async function main(): Promise<void> {
  const expired = Number(process.argv[2] ?? 100_000);
  const kept = Number(process.argv[3] ?? 20_000);
  const baselineRequests = Number(process.argv[4] ?? 2000);
  const stack = await startBenchStack({ name: 'retention', poolSize: 10 });
  const temporal = await connectTemporalClient({
    address: stack.temporalAddress,
    namespace: stack.config.temporal.namespace,
  });
  const api = await serveBenchApi(stack, temporal, createLogger('error', 'bench'));
  const { teamIds, creatorUid } = await insertBenchTeams(stack.dataSource.manager, 'bench', 50);
  log(`seeding ${expired} runs past ${RETENTION_DAYS} days and ${kept} recent ones ...`);
  await seed(stack, teamIds, creatorUid, expired, kept);

  const url = `${api.base}/agent/runs`;
  const time = async (): Promise<number> => {
    const start = performance.now();
    const res = await fetch(url, { headers: api.headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /agent/runs: HTTP ${res.status}`);
    return performance.now() - start;
  };
  for (let i = 0; i < 50; i++) await time(); // warm
  const baseline: number[] = [];
  for (let i = 0; i < baselineRequests; i++) baseline.push(await time());

  log(`\nretention deletes the ${expired} runs (RUN_RETENTION_DAYS=${RETENTION_DAYS}) while the API is asked:`);
  const { running, paused, totals } = await measureInTurns(time, startRetention(stack));
  const left = await countRunsEndedSince(stack.dataSource.manager, RETENTION_DAYS);

  log(`\nGET /agent/runs of the big team, one request after the other:`);
  log(figures('before any deletion', baseline));
  log(figures(`retention paused (${PAUSED_MS / 1000} s turns)`, paused));
  log(figures(`retention deleting (${RUNNING_MS / 1000} s turns)`, running));
  log(
    `retention: ${totals.deleted} runs in ${totals.seconds.toFixed(0)} s of running (${(totals.deleted / totals.seconds).toFixed(0)} runs/s), ` +
      `${totals.calls} activity calls; left: ${left.expired} expired, ${left.kept} kept`,
  );
  const ratio = percentile(running, 99) / percentile(paused, 99);
  log(`p99 deleting / paused: ${ratio.toFixed(2)} (target ≤ 2): ${ratio <= 2 ? 'within target' : 'OVER TARGET'}`);

  await closeServer(api.server);
  await temporal.connection.close();
  await stack.stop();
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
