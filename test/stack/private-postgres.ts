/**
 * A PostgreSQL of its own for a test that freezes or stops it: starts the embedded server (an
 * ES module jest cannot load, hence a child process), prints one JSON line with its URL and
 * data dir, and stops it when stdin closes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../infra/embedded-postgres';
import { freePort } from '../helpers/free-port';

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-private-pg-'));
  chmodSync(dataDir, 0o755);
  const postgres = await startEmbeddedPostgres({ dir: dataDir, port: await freePort(), database: 'agent_runs' });
  process.stdout.write(`${JSON.stringify({ url: postgres.url, dataDir })}\n`);
  const stop = () => {
    void postgres
      .stop()
      .then(() => rmSync(dataDir, { recursive: true, force: true }))
      .finally(() => process.exit(0));
  };
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}

main().catch((err: unknown) => {
  process.stderr.write(
    `private PostgreSQL failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
