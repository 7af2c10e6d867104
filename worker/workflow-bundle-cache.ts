import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, Runtime } from '@temporalio/worker';
import { workflowSources } from './workflow-sources';

/** The modules webpack put in a bundle, as its development output names them (`./workflows/…`, `./node_modules/…`). */
const MODULE_ID = /^\/\*\*\*\/ "(\.\/[^"]+)"/gm;

interface Manifest {
  /** The bundler's version and the bundle's entry points. */
  key: string;
  /** Every module of the bundle (relative to the directory it was bundled from) and its SHA-256. */
  files: Record<string, string>;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

function fileHash(file: string): string | null {
  try {
    return sha256(readFileSync(file));
  } catch {
    return null;
  }
}

function bundleKey(): string {
  const sdkPackage = path.join(path.dirname(require.resolve('@temporalio/worker')), '..', 'package.json');
  const { version } = JSON.parse(readFileSync(sdkPackage, 'utf8')) as { version: string };
  return sha256(JSON.stringify({ version, sources: workflowSources(), cwd: process.cwd() }));
}

function isUpToDate(manifestFile: string, key: string): boolean {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
  } catch {
    return false;
  }
  return manifest.key === key && Object.entries(manifest.files).every(([file, hash]) => fileHash(file) === hash);
}

/** Where the bundle of this checkout is kept: the user's cache, shared by every data directory. */
export function workflowBundleCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-runs', 'workflow-bundle', sha256(process.cwd()).slice(0, 16));
}

/**
 * The workflow bundle of `npm start`, which has no prebuilt one (`npm run build`): kept in `dir`
 * with the SHA-256 of every module webpack put in it, and bundled again only when one of those
 * changed (or the SDK did). Bundling takes seconds on every start otherwise.
 */
export async function cachedWorkflowBundle(dir = workflowBundleCacheDir()): Promise<string> {
  const bundleFile = path.join(dir, 'workflow-bundle.js');
  const manifestFile = path.join(dir, 'workflow-bundle.json');
  const key = bundleKey();
  if (isUpToDate(manifestFile, key)) return bundleFile;
  const { code } = await bundleWorkflowCode({ ...workflowSources(), logger: Runtime.instance().logger });
  const modules = [...new Set([...code.matchAll(MODULE_ID)].map((m) => m[1]!))];
  mkdirSync(dir, { recursive: true });
  rmSync(manifestFile, { force: true });
  writeFileSync(`${bundleFile}.tmp`, code);
  renameSync(`${bundleFile}.tmp`, bundleFile);
  // Kept only when webpack named the workflows among its modules: else nothing says when it is stale.
  if (modules.some((m) => m.startsWith('./workflows/'))) {
    const files = Object.fromEntries(modules.map((m) => [m, fileHash(m) ?? '']));
    writeFileSync(manifestFile, JSON.stringify({ key, files } satisfies Manifest));
  }
  return bundleFile;
}
