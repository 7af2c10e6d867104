import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const ROOT = path.resolve(__dirname, '..', '..');

export interface PrivatePostgres {
  url: string;
  /** The server's main process, read from its lock file (it changes if the server restarts). */
  postmasterPid(): number;
  stop(): Promise<void>;
}

/**
 * Starts a PostgreSQL only this test file uses (see test/stack/private-postgres.ts); with `tls`,
 * its `agent_runs` database takes TLS connections only, with that certificate.
 */
export async function startPrivatePostgres(
  options: { tls?: { cert: string; key: string } } = {},
): Promise<PrivatePostgres> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/stack/private-postgres.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...(options.tls ? { AGENT_RUNS_TEST_PG_TLS: JSON.stringify(options.tls) } : {}) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`private PostgreSQL exited with ${code} before it was ready`)));
  });
  const { url, dataDir } = JSON.parse(line) as { url: string; dataDir: string };
  return {
    url,
    postmasterPid: () => Number(readFileSync(path.join(dataDir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]),
    async stop() {
      if (child.exitCode !== null) return;
      child.stdin!.end();
      await once(child, 'exit');
    },
  };
}
