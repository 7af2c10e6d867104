/**
 * The retention of bench/retention-impact.ts, in a process of its own as a worker's would be:
 * the maintenance workflow's activity (`deleteExpiredRuns`, RUN_RETENTION_DAYS, its batches),
 * called until it says nothing is left, printing its progress and, last, a JSON line of totals
 * (with the time it was paused: see `resumed`).
 * Reads the same environment as a worker (DATABASE_URL, TEMPORAL_ADDRESS, ...).
 */
import { resolveSecretsKeyring } from '../infra/secrets-key';
import { createMaintenanceActivities } from '../activities/maintenance-activities';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import { connectTemporalClient, openDataSource } from '../infra/connections';
import { openObjectStore } from '../infra/object-store/create-object-store';
import { resolveEndpoints, temporalTarget } from '../infra/runtime';

/**
 * The benchmark pauses retention between activity calls: 'pause' from the parent is answered
 * 'paused' before the next call, which waits for 'resume'.
 */
let pauseAsked = false;
let resume: (() => void) | undefined;
process.on('message', (message) => {
  if (message === 'pause') pauseAsked = true;
  if (message === 'resume') {
    pauseAsked = false;
    resume?.();
  }
});
async function resumed(): Promise<void> {
  if (!pauseAsked) return;
  const waiting = new Promise<void>((resolve) => (resume = resolve));
  process.send?.('paused');
  await waiting;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const endpoints = resolveEndpoints(config);
  const dataSource = await openDataSource(endpoints.databaseUrl, { queryTimeoutMs: config.database.queryTimeoutMs });
  const { connection, client } = await connectTemporalClient(temporalTarget(config, endpoints));
  const activities = createMaintenanceActivities({
    dataSource,
    objectStore: await openObjectStore(config.objectStore),
    config,
    temporal: client,
    logger: createLogger('error', 'bench'),
    secretsKeyring: resolveSecretsKeyring(config),
  });
  const started = performance.now();
  let pausedMs = 0;
  let deleted = 0;
  let calls = 0;
  let saidAt = started;
  for (let more = true; more; calls++) {
    const pausedAt = performance.now();
    await resumed();
    pausedMs += performance.now() - pausedAt;
    const batch = await activities.deleteExpiredRuns();
    deleted += batch.deleted;
    more = batch.more;
    if (performance.now() - saidAt > 10_000) {
      saidAt = performance.now();
      process.stdout.write(`  retention: ${deleted} runs deleted\n`);
    }
  }
  const seconds = (performance.now() - started - pausedMs) / 1000;
  process.stdout.write(`${JSON.stringify({ deleted, calls, seconds })}\n`);
  await connection.close();
  await dataSource.destroy();
  // The parent's channel would keep this process alive.
  process.disconnect?.();
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
