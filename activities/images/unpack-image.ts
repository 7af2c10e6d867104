import { execFile } from 'node:child_process';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { diskUsageBytes } from '../sandbox/run-disk';
import { HOST_PATH } from '../sandbox/host-root';
import { IMAGE_MOUNT_POINTS } from '../sandbox/sandbox-paths';
import { ToolMissingError, type ToolSandbox } from '../sandbox/tool-sandbox';
import { ImagePullError } from './image-pull-error';

const run = promisify(execFile);

const UNPACK_POLL_MS = 1000;

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** What an image says about how its programs run (OCI image config, as umoci turns it into a runtime bundle). */
export interface ImageProcessConfig {
  /** `NAME=value` entries of the image's `Env`. */
  env: string[];
  workingDir: string;
  /** `uid:gid` the image asks for (its processes run as the sandbox's own user regardless). */
  user: string;
}

/**
 * Unpacks the OCI layout's image into `bundleDir/rootfs` with umoci, rootless (files belong to
 * the tool's user and nothing is setuid to anyone else), then makes the sandbox's mount points.
 * umoci runs in a tool sandbox (activities/sandbox/tool-sandbox.ts) with no network that can
 * write only the pull's staging directory (`layoutDir` and `bundleDir` are in it), as
 * IMAGE_TOOLS_UID when the worker is root: a hostile layer meets an unprivileged process that
 * sees nothing else of the host.
 */
export async function unpackImage(
  layoutDir: string,
  bundleDir: string,
  options: { signal?: AbortSignal; timeoutMs: number; maxBytes: number; what: string; tools: ToolSandbox },
): Promise<ImageProcessConfig> {
  let tool;
  try {
    tool = options.tools.wrap(['umoci', 'unpack', '--rootless', '--image', `${layoutDir}:image`, bundleDir], {
      network: 'none',
      writable: [path.dirname(bundleDir)],
      env: { PATH: HOST_PATH },
    });
  } catch (err) {
    if (!(err instanceof ToolMissingError)) throw err;
    throw new ImagePullError(
      'unsupported',
      'this worker cannot unpack images: umoci is not installed on it (an operator installs skopeo and umoci)',
    );
  }
  // Layers can expand far beyond their download: what is unpacked is measured as it grows.
  const tooLarge = new AbortController();
  let measuring = false;
  let unpacked = 0;
  const watch = setInterval(() => {
    if (measuring) return;
    measuring = true;
    void diskUsageBytes([bundleDir])
      .then((bytes) => {
        unpacked = bytes;
        if (bytes > options.maxBytes) tooLarge.abort();
      })
      .catch(() => undefined)
      .finally(() => (measuring = false));
  }, UNPACK_POLL_MS);
  try {
    await run(tool.file, tool.args, {
      env: tool.env,
      signal: options.signal ? AbortSignal.any([options.signal, tooLarge.signal]) : tooLarge.signal,
      timeout: options.timeoutMs,
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
  const rootfs = path.join(bundleDir, 'rootfs');
  for (const dir of IMAGE_MOUNT_POINTS.dirs) await ensureKind(rootfs, dir.slice(1), 'dir');
  for (const file of IMAGE_MOUNT_POINTS.files) await ensureKind(rootfs, file.slice(1), 'file');
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
