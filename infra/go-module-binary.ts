import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A command of a Go module, as its makers build it, at one version. */
export interface GoModuleCommand {
  /** What the error messages call it: "Versity Gateway (the S3 server of the tests)". */
  title: string;
  module: string;
  version: string;
  /** The command's package inside the module, e.g. `./cmd/helm`. */
  pkg: string;
  /** The binary's file name in the cache. */
  binary: string;
  /** `-X` settings the module's own build passes (its version string, say). */
  ldflags?: string[];
  /** Build tags, as its makers document them (to leave out what the tests do not use). */
  tags?: string[];
  /** How long `go build` may take (default 15 minutes): a large module on two busy cores takes long. */
  buildTimeoutMs?: number;
}

/**
 * The command's binary, built into the cache (`agent-runs/<binary>/<version>/<binary>`) the first
 * time: `go mod download` fetches the module from the Go module proxy, and it is built inside the
 * downloaded module (its own go.mod and go.sum, `replace` lines included, pin what it is built
 * with). Later calls, and other processes, reuse the binary.
 */
export async function ensureGoModuleBinary(command: GoModuleCommand): Promise<string> {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', command.binary, command.version);
  const binary = path.join(dir, command.binary);
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  // GOWORK=off: a module that ships a go.work (Prometheus does) is built as its go.mod alone.
  const env = { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', GOWORK: 'off' };
  const partial = `${binary}.${process.pid}.partial`;
  const ldflags = ['-s', '-w', ...(command.ldflags ?? []).flatMap((setting) => ['-X', setting])].join(' ');
  try {
    const { stdout } = await run('go', ['mod', 'download', '-json', `${command.module}@${command.version}`], {
      cwd: dir,
      env,
      timeout: 300_000,
    });
    const { Dir: moduleDir } = JSON.parse(stdout) as { Dir: string };
    const tags = command.tags?.length ? [`-tags=${command.tags.join(',')}`] : [];
    await run('go', ['build', '-trimpath', `-ldflags=${ldflags}`, ...tags, '-o', partial, command.pkg], {
      cwd: moduleDir,
      env,
      timeout: command.buildTimeoutMs ?? 900_000,
    });
  } catch (err) {
    await rm(partial, { force: true });
    const { stdout, stderr, code, killed } = err as {
      stdout?: string;
      stderr?: string;
      code?: string;
      killed?: boolean;
    };
    if (code === 'ENOENT') throw new Error(`${command.title} is built once with Go, and \`go\` is not on PATH`);
    const why = killed
      ? 'did not finish in time (what it built so far is in the Go build cache: run it again)'
      : 'failed';
    // `go mod download -json` says what went wrong in its JSON, on stdout.
    const detail = stderr?.trim() || /"Error": "(.*)"/.exec(stdout ?? '')?.[1] || (err as Error).message;
    throw new Error(`building ${command.title} ${command.version} with Go ${why}: ${detail}`);
  }
  // Atomic: a concurrent start never runs a half-written binary.
  await rename(partial, binary);
  return binary;
}
