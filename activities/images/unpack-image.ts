import { execFile } from 'node:child_process';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What an image says about how its programs run (OCI image config, as umoci turns it into a runtime bundle). */
export interface ImageProcessConfig {
  /** `NAME=value` entries of the image's `Env`. */
  env: string[];
  workingDir: string;
  /** `uid:gid` the image asks for (its processes run as the sandbox's own user regardless). */
  user: string;
}

/**
 * Paths the sandbox mounts over in an image's root filesystem. The root is mounted read-only, so
 * bubblewrap cannot make them there: they are made once, in the cache's copy.
 */
const MOUNT_DIRS = ['proc', 'dev', 'tmp', 'workspace', 'home/agent', 'run/agent-runs', 'etc'];
const MOUNT_FILES = [
  'etc/passwd',
  'etc/group',
  'etc/hosts',
  'etc/hostname',
  'run/agent-runs/init',
  'run/agent-runs/proxy.sock',
  'run/agent-runs/gateway.sock',
];

/**
 * Unpacks the OCI layout's image into `bundleDir/rootfs` (umoci, rootless: files belong to the
 * worker's user, and nothing is setuid to anyone else), then makes the sandbox's mount points.
 */
export async function unpackImage(
  layoutDir: string,
  bundleDir: string,
  options: { signal?: AbortSignal; timeoutMs: number },
): Promise<ImageProcessConfig> {
  try {
    await run('umoci', ['unpack', '--rootless', '--image', `${layoutDir}:image`, bundleDir], {
      signal: options.signal,
      timeout: options.timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    const { stderr } = err as { stderr?: string };
    throw new Error(`umoci unpack: ${stderr?.trim() || (err as Error).message}`);
  }
  const rootfs = path.join(bundleDir, 'rootfs');
  for (const dir of MOUNT_DIRS) await ensureKind(rootfs, dir, 'dir');
  for (const file of MOUNT_FILES) await ensureKind(rootfs, file, 'file');
  const bundle = JSON.parse(await readFile(path.join(bundleDir, 'config.json'), 'utf8')) as {
    process?: { env?: string[]; cwd?: string; user?: { uid?: number; gid?: number } };
  };
  return {
    env: (bundle.process?.env ?? []).filter((e) => e.includes('=')),
    workingDir: bundle.process?.cwd ?? '/',
    user: `${bundle.process?.user?.uid ?? 0}:${bundle.process?.user?.gid ?? 0}`,
  };
}

/**
 * Makes `rootfs/relative` a directory or an empty file, one component at a time: a symlink (which
 * could point anywhere on the host) or the wrong kind on the way is replaced, never followed.
 */
async function ensureKind(rootfs: string, relative: string, kind: 'dir' | 'file'): Promise<void> {
  const parts = relative.split('/');
  let current = rootfs;
  for (const [i, part] of parts.entries()) {
    current = path.join(current, part);
    const want = i === parts.length - 1 ? kind : 'dir';
    const stat = await lstat(current).catch(() => undefined);
    if (stat && (want === 'dir' ? stat.isDirectory() : stat.isFile())) continue;
    if (stat) await rm(current, { recursive: true, force: true });
    if (want === 'dir') await mkdir(current, { mode: 0o755 });
    else await writeFile(current, '', { mode: 0o644, flag: 'wx' });
  }
}
