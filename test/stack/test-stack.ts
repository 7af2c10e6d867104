/**
 * Brings up the one PostgreSQL and the one Temporal dev server of a test run with the same
 * bootstrap code as `npm start`, and the run's S3 server (Versity Gateway, for the object store's
 * S3 backend), bundles the workflow once, prints one JSON line, and keeps running until stdin
 * closes; the servers few test files use (Gitea) it starts when the first of them asks. Run by the jest global setup as a child process.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { loadConfig } from '../../core/config';
import { runMigrations } from '../../db/data-source';
import { openDataSource } from '../../infra/connections';
import { startDependencies } from '../../infra/runtime';
import { ensureVersityGateway, startVersityGateway, type VersityGateway } from '../../infra/versity-gateway';
import { workflowSources } from '../../worker/workflow-sources';
import { freePort } from '../helpers/free-port';
import { serveOnDemand } from './on-demand-servers';
import { CONTINUE_AS_NEW_SETTING, CONTINUE_AS_NEW_SUGGESTED_AT } from './server-settings';

export interface TestStackInfo {
  databaseUrl: string;
  temporalAddress: string;
  workflowBundlePath: string;
  dataDir: string;
  /** The run's S3 server and its bucket (test contexts with `objectStore: 's3'` use it). */
  s3: { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string };
  /** Where test files ask for the servers only some of them use (on-demand-servers.ts: the run's Gitea). */
  onDemand: string;
}

const S3_BUCKET = 'agent-runs-test';

/** The run's S3 server on a free loopback port, its data under the stack's directory. */
async function startS3(dataDir: string): Promise<VersityGateway> {
  return startVersityGateway({
    binary: await ensureVersityGateway(),
    dir: path.join(dataDir, 's3'),
    port: await freePort(),
    buckets: [S3_BUCKET],
    accessKeyId: 'agent-runs-test',
    secretAccessKey: randomBytes(18).toString('hex'),
  });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-test-'));
  // PostgreSQL runs as the `postgres` user when the tests run as root: it must reach its data dir.
  chmodSync(dataDir, 0o755);
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    AGENT_RUNS_DATA_DIR: dataDir,
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_DEV_HTTP_PORT: String(await freePort()),
    TEMPORAL_DEV_METRICS_PORT: String(await freePort()),
  });
  const s3Started = startS3(dataDir);
  s3Started.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  const deps = await startDependencies(config, (m) => process.stderr.write(`${m}\n`), {
    temporalUi: false,
    // No test restarts this server; an in-memory store spares it a file's writes.
    temporalInMemory: true,
    // Low enough that a test run of a few dozen steps continues as new, as day-long runs do.
    temporalDynamicConfig: { [CONTINUE_AS_NEW_SETTING]: CONTINUE_AS_NEW_SUGGESTED_AT },
  });
  const dataSource = await openDataSource(deps.databaseUrl, { poolSize: 2 });
  await runMigrations(dataSource);
  await dataSource.destroy();
  const { code } = await bundleWorkflowCode({ ...workflowSources(), logger: quietLogger });
  const workflowBundlePath = path.join(dataDir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, code);
  const s3 = await s3Started;
  const onDemand = await serveOnDemand(dataDir);
  const info: TestStackInfo = {
    databaseUrl: deps.databaseUrl,
    temporalAddress: deps.temporalAddress,
    workflowBundlePath,
    dataDir,
    s3: { endpoint: s3.endpoint, bucket: S3_BUCKET, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    onDemand: onDemand.url,
  };
  process.stdout.write(`${JSON.stringify(info)}\n`);

  const stop = () => {
    void Promise.all([deps.stop(), s3.stop(), onDemand.stop()])
      .then(() => rmSync(dataDir, { recursive: true, force: true }))
      .finally(() => process.exit(0));
  };
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
  process.on('SIGTERM', stop);
}

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: noop, log: noop };

main().catch((err: unknown) => {
  process.stderr.write(`test stack failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
