import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdir, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Go source of sandbox-init, beside this file in the repository (also when run from dist/). */
function sourceDir(): string | undefined {
  return [
    path.join(__dirname, 'sandbox-init'),
    path.resolve(__dirname, '../../../activities/sandbox/sandbox-init'),
  ].find((dir) => existsSync(path.join(dir, 'main.go')));
}

/**
 * The static `sandbox-init` binary every sandboxed process starts with: AGENT_SANDBOX_INIT_PATH,
 * else a build of the repository's source with Go, kept in the cache under the source's hash (so
 * a changed source is built again, and workers of one machine share the build).
 */
export async function locateSandboxInit(configured: string | undefined): Promise<string> {
  if (configured) {
    if (!existsSync(configured)) throw new Error(`AGENT_SANDBOX_INIT_PATH=${configured} does not exist`);
    return configured;
  }
  const source = sourceDir();
  if (!source) {
    throw new Error(
      'AGENT_SANDBOX_INIT_PATH is not set and the source of sandbox-init (activities/sandbox/sandbox-init) is not here to build it',
    );
  }
  const hash = createHash('sha256');
  const files = readdirSync(source)
    .filter((f) => f === 'go.mod' || f.endsWith('.go'))
    .sort();
  for (const file of files) hash.update(file).update(readFileSync(path.join(source, file)));
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', 'sandbox-init', hash.digest('hex').slice(0, 16));
  const binary = path.join(dir, 'sandbox-init');
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.partial`;
  try {
    await run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', partial, '.'], {
      cwd: source,
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      timeout: 300_000,
    });
  } catch (err) {
    await rm(partial, { force: true });
    const { stderr, code } = err as { stderr?: string; code?: string };
    throw new Error(
      code === 'ENOENT'
        ? 'sandbox-init must be built once with Go (1.23 or newer), and `go` is not on PATH: install Go, or build it elsewhere (`CGO_ENABLED=0 go build` in activities/sandbox/sandbox-init) and set AGENT_SANDBOX_INIT_PATH'
        : `building sandbox-init with Go failed: ${stderr?.trim() || (err as Error).message}`,
    );
  }
  // Atomic: a worker never runs a half-written binary, and concurrent builds both land whole.
  await rename(partial, binary);
  return binary;
}

/**
 * Copies sandbox-init to `dest`, executable by everyone (a sandbox's uid reads it there, while
 * the build cache may be private to the worker's user). Renamed into place: another worker on the
 * same directory may be running the current copy.
 */
export async function installSandboxInit(source: string, dest: string): Promise<void> {
  const partial = `${dest}.${process.pid}`;
  await copyFile(source, partial);
  await chmod(partial, 0o755);
  await rename(partial, dest);
}
