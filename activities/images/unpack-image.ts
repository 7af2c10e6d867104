import { mib } from '../../core/human-units';
import { constants } from 'node:fs';
import { lstat, mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { diskUsageBytes } from '../sandbox/run-disk';
import { HOST_PATH } from '../sandbox/host-root';
import { IMAGE_MOUNT_POINTS } from '../sandbox/sandbox-paths';
import { runTool, ToolMissingError, type ToolSandbox } from '../sandbox/tool-sandbox';
import { ImagePullError } from './image-pull-error';

const UNPACK_POLL_MS = 1000;

/** What an image says about how its programs run (OCI image config, as umoci turns it into a runtime bundle). */
export interface ImageProcessConfig {
  /** `NAME=value` entries of the image's `Env`. */
  env: string[];
  workingDir: string;
  /** `uid:gid` the image asks for (its processes run as the sandbox's own user regardless). */
  user: string;
}

/** The most of an image's runtime config (`config.json`, which umoci writes from the image) the worker reads. */
const MAX_BUNDLE_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * Unpacks the image of the OCI layout `workDir/layout` with umoci, rootless (files belong to the
 * tool's user and nothing is setuid to anyone else), and moves its root filesystem to
 * `intoDir/rootfs`, with the sandbox's mount points made in it.
 *
 * umoci runs in a tool sandbox (activities/sandbox/tool-sandbox.ts) with no network that can
 * write only `workDir`, as IMAGE_TOOLS_UID when the worker is root. What it leaves there is the
 * tool's: the worker (root) follows no symlink of it. It checks that the bundle and its root
 * filesystem are real directories, reads the config without following a link and up to a size,
 * and moves the root filesystem out into `intoDir`, which the worker made, before it touches
 * anything in it. (The tool's processes are gone by then: its sandbox's pid namespace ends with it.)
 */
export async function unpackImage(
  workDir: string,
  intoDir: string,
  options: { signal?: AbortSignal; timeoutMs: number; maxBytes: number; what: string; tools: ToolSandbox },
): Promise<ImageProcessConfig> {
  const bundleDir = path.join(workDir, 'bundle');
  let tool;
  try {
    tool = options.tools.wrap(
      ['umoci', 'unpack', '--rootless', '--image', `${path.join(workDir, 'layout')}:image`, bundleDir],
      { network: 'none', writable: [workDir], env: { PATH: HOST_PATH } },
    );
  } catch (err) {
    if (!(err instanceof ToolMissingError)) throw err;
    throw new ImagePullError(
      'unsupported',
      'this worker cannot unpack images: umoci is not installed on it (an operator installs skopeo and umoci)',
    );
  }
  // Layers can expand far beyond their download: what the tool has written is measured as it grows.
  const tooLarge = new AbortController();
  let measuring = false;
  let unpacked = 0;
  const watch = setInterval(() => {
    if (measuring) return;
    measuring = true;
    void diskUsageBytes([workDir])
      .then((bytes) => {
        unpacked = bytes;
        if (bytes > options.maxBytes) tooLarge.abort();
      })
      .catch(() => undefined)
      .finally(() => (measuring = false));
  }, UNPACK_POLL_MS);
  try {
    await runTool(tool, {
      signal: options.signal ? AbortSignal.any([options.signal, tooLarge.signal]) : tooLarge.signal,
      timeoutMs: options.timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    if (tooLarge.signal.aborted) {
      throw new ImagePullError(
        'too_large',
        `${options.what} grew past ${mib(unpacked)} while it was unpacked, more than the image cache holds (IMAGE_CACHE_MAX_BYTES, ${mib(options.maxBytes)})`,
      );
    }
    const { stderr } = err as { stderr?: string };
    throw new Error(`umoci unpack: ${stderr?.trim() || (err as Error).message}`);
  } finally {
    clearInterval(watch);
  }
  await assertRealDirectory(bundleDir);
  await assertRealDirectory(path.join(bundleDir, 'rootfs'));
  const bundle = JSON.parse(await readToolFile(path.join(bundleDir, 'config.json'), MAX_BUNDLE_CONFIG_BYTES)) as {
    process?: { env?: unknown; cwd?: unknown; user?: { uid?: unknown; gid?: unknown } };
  };
  const rootfs = path.join(intoDir, 'rootfs');
  await rename(path.join(bundleDir, 'rootfs'), rootfs);
  for (const dir of IMAGE_MOUNT_POINTS.dirs) await ensureKind(rootfs, dir.slice(1), 'dir');
  for (const file of IMAGE_MOUNT_POINTS.files) await ensureKind(rootfs, file.slice(1), 'file');
  const env = Array.isArray(bundle.process?.env) ? bundle.process.env : [];
  const { cwd, user } = bundle.process ?? {};
  return {
    env: env.filter((e): e is string => typeof e === 'string' && e.includes('=')),
    workingDir: typeof cwd === 'string' ? cwd : '/',
    user: `${Number(user?.uid ?? 0)}:${Number(user?.gid ?? 0)}`,
  };
}

async function assertRealDirectory(dir: string): Promise<void> {
  const stat = await lstat(dir).catch(() => undefined);
  if (!stat?.isDirectory()) throw new Error(`umoci unpack left no directory at ${path.basename(dir)}`);
}

/** A regular file the tool wrote, read without following a symlink, up to `maxBytes`. */
async function readToolFile(file: string, maxBytes: number): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > maxBytes) {
      throw new Error(`umoci unpack left a ${path.basename(file)} that is not a file of at most ${maxBytes} bytes`);
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
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
