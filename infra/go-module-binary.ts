import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A program built from a Go module's copy on the Go module proxy. */
export interface GoModuleBinary {
  /** What it is, for error messages: "Versity Gateway (the S3 server of the tests)". */
  description: string;
  module: string;
  version: string;
  /** The package to build, relative to the module's root: `./cmd/promtool`. */
  pkg: string;
  /** The binary's name, and its cache folder's (`agent-runs/<name>/<version>/<name>`). */
  name: string;
  /** Build tags, as its makers document them (to leave out what the tests do not use). */
  tags?: string[];
}

/**
 * The binary, built into the cache the first time (once per machine): `go mod download` fetches
 * the module, and it is built inside the downloaded module, so that its own go.mod (its `replace`
 * lines included) and go.sum pin what it is built with, as its makers build it.
 */
export async function ensureGoModuleBinary(spec: GoModuleBinary): Promise<string> {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', spec.name, spec.version);
  const binary = path.join(dir, spec.name);
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });
  // GOWORK=off: a module that ships a go.work (Prometheus does) is built as its go.mod alone.
  const env = { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', GOWORK: 'off' };
  const partial = `${binary}.${process.pid}.partial`;
  try {
    const { stdout } = await run('go', ['mod', 'download', '-json', `${spec.module}@${spec.version}`], {
      cwd: dir,
      env,
      timeout: 300_000,
    });
    const { Dir: moduleDir } = JSON.parse(stdout) as { Dir: string };
    const tags = spec.tags?.length ? [`-tags=${spec.tags.join(',')}`] : [];
    await run('go', ['build', '-trimpath', '-ldflags=-s -w', ...tags, '-o', partial, spec.pkg], {
      cwd: moduleDir,
      env,
      timeout: 2_700_000,
    });
  } catch (err) {
    await rm(partial, { force: true });
    const { stderr, code } = err as { stderr?: string; code?: string };
    throw new Error(
      code === 'ENOENT'
        ? `${spec.description} is built once with Go, and \`go\` is not on PATH`
        : `building ${spec.description} ${spec.version} with Go failed: ${stderr?.trim() || (err as Error).message}`,
    );
  }
  // Atomic: a concurrent start never runs a half-written binary.
  await rename(partial, binary);
  return binary;
}
