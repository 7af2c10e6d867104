/**
 * A PostgreSQL of its own for a test that freezes or stops it: starts the embedded server (an
 * ES module jest cannot load, hence a child process), prints one JSON line with its URL and
 * data dir, and stops it when stdin closes.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../infra/embedded-postgres';
import { freePort } from '../helpers/free-port';

/**
 * With AGENT_RUNS_TEST_PG_TLS (`{"cert":…,"key":…}`): TLS on, and the `agent_runs` database
 * reachable over TLS only (plaintext is left to the `postgres` database, where the start creates it).
 */
function tlsFlags(dataDir: string): string[] {
  const tls = process.env.AGENT_RUNS_TEST_PG_TLS;
  if (!tls) return [];
  const { cert, key } = JSON.parse(tls) as { cert: string; key: string };
  // Copies its user can read; the key only when that user owns it, unreadable to others.
  const ownCert = path.join(dataDir, 'server.crt');
  const ownKey = path.join(dataDir, 'server.key');
  copyFileSync(cert, ownCert);
  chmodSync(ownCert, 0o644);
  copyFileSync(key, ownKey);
  chmodSync(ownKey, 0o600);
  if (process.getuid?.() === 0) chownSync(ownKey, Number(execFileSync('id', ['-u', 'postgres'])), 0);
  const hba = path.join(dataDir, 'pg_hba.conf');
  writeFileSync(hba, 'host postgres all 127.0.0.1/32 scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n');
  chmodSync(hba, 0o644);
  return ['-c', 'ssl=on', '-c', `ssl_cert_file=${ownCert}`, '-c', `ssl_key_file=${ownKey}`, '-c', `hba_file=${hba}`];
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-private-pg-'));
  chmodSync(dataDir, 0o755);
  const postgres = await startEmbeddedPostgres({
    dir: dataDir,
    port: await freePort(),
    database: 'agent_runs',
    serverFlags: tlsFlags(dataDir),
  });
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
