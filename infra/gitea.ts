import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, copyFile, cp, link, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { dyingWithThisProcess, stopChild } from './child-process';
import { ensureGoModuleBinary } from './go-module-binary';

const run = promisify(execFile);

/**
 * Gitea (code.gitea.io/gitea, MIT): a real forge (git over HTTP and the API v1 pull requests) that
 * the forge adapters are tested against. One Go binary, built from the Go module proxy's copy of
 * this version once per machine.
 */
export const GITEA_MODULE = 'code.gitea.io/gitea';
export const GITEA_VERSION = 'v1.27.3';

/** What Gitea reads from `[server] STATIC_ROOT_PATH` when built without the `bindata` tag. */
const STATIC_DIRS = ['options', 'templates'];

/**
 * The `gitea` binary, built into the cache (`agent-runs/gitea/<version>`) the first time, inside
 * the downloaded module (its go.mod has `replace` lines), and beside it the module's `options/`
 * and `templates/`: without the `bindata` tag no frontend is built, and Gitea reads those from
 * `[server] STATIC_ROOT_PATH`. Returns the binary; the static root is its directory.
 */
export async function ensureGitea(): Promise<string> {
  const binary = await ensureGoModuleBinary({
    title: 'Gitea (the forge of the tests)',
    module: GITEA_MODULE,
    version: GITEA_VERSION,
    pkg: '.',
    binary: 'gitea',
    ldflags: [`main.Version=${GITEA_VERSION.slice(1)}`],
    // Gitea's documented SQLite tags. Since 1.27 SQLite is the pure-Go driver (modernc) unless
    // `sqlite_mattn` is set, so the build needs no C compiler (CGO_ENABLED=0, as its Makefile).
    tags: ['sqlite', 'sqlite_unlock_notify'],
    buildTimeoutMs: 2_700_000,
  });
  const dir = path.dirname(binary);
  if (!STATIC_DIRS.every((d) => existsSync(path.join(dir, d)))) {
    const { stdout } = await run('go', ['mod', 'download', '-json', `${GITEA_MODULE}@${GITEA_VERSION}`], {
      cwd: dir,
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', GOWORK: 'off' },
    });
    const { Dir: moduleDir } = JSON.parse(stdout) as { Dir: string };
    for (const d of STATIC_DIRS) await cp(path.join(moduleDir, d), path.join(dir, d), { recursive: true });
  }
  return binary;
}

export interface Gitea {
  /** `http://127.0.0.1:<port>`: the web root, git over HTTP at `/<owner>/<repo>.git`, the API at `/api/v1`. */
  url: string;
  /** The site administrator the tests act as. */
  username: string;
  /** An access token of the administrator with every scope. */
  token: string;
  stop(): Promise<void>;
}

/** The uid that runs Gitea: `nobody` when this process is root (Gitea refuses root), else this process's own. */
async function giteaUser(): Promise<{ name: string; uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return { name: (await run('id', ['-un'])).stdout.trim() };
  const [uid, gid] = await Promise.all([
    run('id', ['-u', 'nobody']).then((r) => Number(r.stdout.trim())),
    run('id', ['-g', 'nobody']).then((r) => Number(r.stdout.trim())),
  ]);
  return { name: 'nobody', uid, gid };
}

/**
 * Starts Gitea on `127.0.0.1:<port>` with everything under `dir` (a fresh app.ini, SQLite,
 * repositories, logs), installed (INSTALL_LOCK), with an administrator and an access token made by
 * `gitea admin user create`. Run as root, it runs as `nobody`, from copies under `dir` (the build
 * cache is root's). It dies with this process. Resolves once `/api/healthz` answers.
 */
export async function startGitea(options: { binary: string; dir: string; port: number }): Promise<Gitea> {
  const user = await giteaUser();
  const { dir, port } = options;
  const binary = await reachableCopy(options.binary, dir);
  const url = `http://127.0.0.1:${port}`;
  const config = path.join(dir, 'app.ini');
  await writeFile(config, appIni({ dir, port, user: user.name }));
  if (user.uid !== undefined) await chownTree(dir, user.uid, user.gid!);
  const env = { PATH: process.env.PATH, HOME: dir, USER: user.name, GITEA_WORK_DIR: dir };
  const gitea = (args: string[]) =>
    run(binary, [...args, '--config', config, '--work-path', dir], {
      env,
      uid: user.uid,
      gid: user.gid,
      timeout: 300_000,
    });
  await gitea(['migrate']);
  const username = 'agent-runs';
  const created = await gitea([
    'admin',
    'user',
    'create',
    '--username',
    username,
    '--email',
    'agent-runs@example.test',
    '--admin',
    '--random-password',
    '--must-change-password=false',
    '--access-token',
    '--access-token-scopes',
    'all',
  ]);
  const token = /Access token was successfully created\.\.\. (\S+)/.exec(created.stdout)?.[1];
  if (!token) throw new Error(`gitea admin user create printed no access token: ${created.stdout}`);
  const command = dyingWithThisProcess(binary, ['web', '--config', config, '--work-path', dir], 'SIGTERM');
  const child = spawn(command.command, command.args, {
    env,
    uid: user.uid,
    gid: user.gid,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await answering(url, child);
  return { url, username, token, stop: () => stopChild(child, 10_000) };
}

/**
 * The binary and its static files where the run user can reach them: a hard link (the cache is
 * on the same filesystem, usually) or a copy of the binary, and a copy of `options/` and
 * `templates/` (about 14 MB).
 */
async function reachableCopy(binary: string, dir: string): Promise<string> {
  const copy = path.join(dir, 'gitea');
  await link(binary, copy).catch(() => copyFile(binary, copy));
  for (const d of STATIC_DIRS)
    await cp(path.join(path.dirname(binary), d), path.join(dir, 'static', d), { recursive: true });
  return copy;
}

async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await chown(dir, uid, gid);
  for (const entry of await readdir(dir, { recursive: true })) {
    if (entry === 'gitea') continue; // the hard link is the cache's binary: root keeps it
    await chown(path.join(dir, entry), uid, gid);
  }
}

/** A test forge's configuration: loopback only, no SSH, no mail, no update checks, in-memory caches and queues. */
function appIni(o: { dir: string; port: number; user: string }): string {
  const secret = () => randomBytes(32).toString('hex');
  return `APP_NAME = agent-runs test forge
RUN_USER = ${o.user}
RUN_MODE = prod
WORK_PATH = ${o.dir}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = ${o.port}
ROOT_URL = http://127.0.0.1:${o.port}/
LOCAL_ROOT_URL = http://127.0.0.1:${o.port}/
STATIC_ROOT_PATH = ${o.dir}/static
APP_DATA_PATH = ${o.dir}/data
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true

[database]
DB_TYPE = sqlite3
PATH = ${o.dir}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = ${o.dir}/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret()}
INTERNAL_TOKEN = ${secret()}

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[cron.update_checker]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = channel

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[webhook]
; the service's inbound endpoint in a test listens on loopback
ALLOWED_HOST_LIST = loopback

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = ${o.dir}/log
`;
}

/** Resolves once Gitea answers its health check; rejects when it exits or 60 s pass. */
async function answering(url: string, child: ChildProcess): Promise<void> {
  const stderr: string[] = [];
  const collect = (chunk: Buffer) => stderr.push(chunk.toString('utf8'));
  child.stderr?.on('data', collect);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Gitea exited (${child.signalCode ?? child.exitCode}): ${stderr.join('').trim()}`);
    }
    const healthy = await fetch(`${url}/api/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) {
      // Read on and dropped from now on, so that a full pipe never blocks it.
      child.stderr?.off('data', collect).resume();
      return;
    }
    if (Date.now() > deadline) {
      await stopChild(child, 1_000);
      throw new Error(`Gitea did not answer at ${url} within 60 s: ${stderr.join('').trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
