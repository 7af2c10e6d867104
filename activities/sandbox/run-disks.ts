import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, rename, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import { runStateDir, workspaceDir } from '../workspace/workspace-paths';
import { runHostCommand } from './host-command';
import { forkLauncher, type ProcessLauncher } from './launched-process';
import { runDiskLayout, type RunDiskLayout } from './run-disk-layout';
import { RunDiskWatchers } from './run-disk-watchers';

/** Where a run's filesystem is mounted on the host. */
export interface RunDiskPaths {
  /** The run's private state (home, tmp, sockets, its CLIs' output), the filesystem's root. */
  stateDir: string;
  /** The workspace on the host: `<stateDir>/workspace`, bound here. */
  workspace: string;
}

/** A run's paths under the workers' workspace root. */
export function runDiskPaths(root: string, runId: string): RunDiskPaths {
  return { stateDir: runStateDir(root, runId), workspace: workspaceDir(root, runId) };
}

/** What a run's files take, and whether that is its whole limit. */
export interface RunDiskUsage {
  bytes: number;
  /** The files take the limit (a write past it fails), or the filesystem has no inode left. */
  reached: boolean;
  /** On a filesystem of the limit's size, which failed any write past it; else measured after the fact. */
  enforced: boolean;
  /** No file can be made any more: the limit's inodes are used up (one per 8 KiB). */
  outOfFiles?: boolean;
}

/** The run cannot write what the worker needs (suid binaries, devices, access times are off). */
const MOUNT_OPTIONS = 'nosuid,nodev,noatime';

/**
 * Each run's files on a filesystem of their own, the size of AGENT_WORKSPACE_MAX_BYTES: a sparse
 * ext4 image per run (`<root>/.disks/<run>.ext4`), loop-mounted as the run's state directory, its
 * `workspace/` bound at the workspace's path. A write past the limit fails in the run with ENOSPC,
 * whatever writes it (fallocate, sparse files, many small files, /tmp); hard links cannot leave
 * it. Deleted files give their blocks back to the host (`discard`). The images are made and
 * mounted by the worker (root); the run's processes never see them.
 */
export class RunDisks {
  readonly layout: RunDiskLayout;
  private readonly dir: string;
  /** Attaches under way, by run: two sandboxes of one run starting at once mount once. */
  private readonly attaching = new Map<string, Promise<boolean>>();
  /** Each mounted filesystem's change watcher, for checkpoints (with sandbox-init, `initPath`). */
  readonly watchers: RunDiskWatchers | undefined;

  constructor(readonly options: { root: string; maxBytes: number; launch?: ProcessLauncher; initPath?: string }) {
    this.layout = runDiskLayout(options.maxBytes);
    this.dir = path.join(options.root, '.disks');
    this.watchers = options.initPath
      ? new RunDiskWatchers({ root: options.root, initPath: options.initPath, launch: options.launch ?? forkLauncher })
      : undefined;
  }

  get description(): string {
    return `a filesystem of ${(this.options.maxBytes / 1024 ** 2).toFixed(1)} MiB per run (AGENT_WORKSPACE_MAX_BYTES; a loop-mounted ext4 image)`;
  }

  imageFile(runId: string): string {
    return path.join(this.dir, `${runId}.ext4`);
  }

  /**
   * Mounts the run's filesystem, making it first when the run has none; idempotent. False for a
   * run whose files are on the host's disk already (made before disk limits): left there.
   */
  attach(runId: string, paths = runDiskPaths(this.options.root, runId)): Promise<boolean> {
    let attaching = this.attaching.get(runId);
    if (!attaching) {
      attaching = this.attachNow(runId, paths).finally(() => this.attaching.delete(runId));
      this.attaching.set(runId, attaching);
    }
    return attaching;
  }

  private async attachNow(runId: string, paths: RunDiskPaths): Promise<boolean> {
    if (!(await isMountPoint(paths.stateDir))) {
      const image = this.imageFile(runId);
      if (!existsSync(image)) {
        if ((await hasEntries(paths.stateDir)) || (await hasEntries(paths.workspace))) return false;
        await this.makeImage(image);
      }
      await mkdir(paths.stateDir, { recursive: true });
      await this.mount(['-t', 'ext4', '-o', `loop,discard,${MOUNT_OPTIONS}`, image, paths.stateDir]);
    }
    const inner = path.join(paths.stateDir, 'workspace');
    await mkdir(inner, { recursive: true });
    await mkdir(paths.workspace, { recursive: true });
    if (!(await isMountPoint(paths.workspace))) {
      await this.mount(['--bind', inner, paths.workspace]);
      await this.mount(['-o', `remount,bind,${MOUNT_OPTIONS}`, paths.workspace]);
    }
    await this.watchers?.start(runId, paths.stateDir);
    return true;
  }

  /** Unmounts the run's filesystem (lazily when something still holds it) and deletes its image. */
  async detach(runId: string, paths = runDiskPaths(this.options.root, runId)): Promise<void> {
    await this.attaching.get(runId)?.catch(() => undefined);
    await this.watchers?.stop(runId);
    await this.unmount(paths.workspace);
    await this.unmount(paths.stateDir);
    await rm(this.imageFile(runId), { force: true });
  }

  /** What the run's files take on its filesystem; undefined when it has none mounted. */
  async usage(runId: string, paths = runDiskPaths(this.options.root, runId)): Promise<RunDiskUsage | undefined> {
    if (!(await isMountPoint(paths.stateDir))) return undefined;
    const fs = await statfs(paths.stateDir);
    const bytes = (fs.blocks - fs.bfree) * fs.bsize;
    const outOfFiles = fs.ffree === 0;
    return {
      bytes,
      reached: bytes >= this.options.maxBytes || outOfFiles,
      enforced: true,
      ...(outOfFiles ? { outOfFiles } : {}),
    };
  }

  /**
   * At the worker's start: mounts again the filesystems of the runs whose workspace is still
   * here (a restart of the worker's container unmounts them), and deletes the images of runs
   * whose workspace is gone and the half-made ones.
   */
  async reattach(): Promise<{ attached: string[]; removed: string[] }> {
    const attached: string[] = [];
    const removed: string[] = [];
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      const runId = /^(.+)\.ext4$/.exec(name)?.[1];
      const paths = runId === undefined ? undefined : runDiskPaths(this.options.root, runId);
      if (runId && paths && existsSync(paths.workspace)) {
        if (await this.attach(runId, paths)) attached.push(runId);
      } else {
        await rm(path.join(this.dir, name), { force: true });
        removed.push(runId ?? name);
      }
    }
    return { attached, removed };
  }

  /** A sparse image of the layout's size with an empty ext4 filesystem, under a temporary name until whole. */
  private async makeImage(image: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await chmod(this.dir, 0o700);
    const partial = `${image}.partial`;
    const file = await open(partial, 'w', 0o600);
    try {
      await file.truncate(this.layout.imageBytes);
    } finally {
      await file.close();
    }
    await runHostCommand('mkfs.ext4', [...this.layout.mkfsArgs, partial], { launch: this.options.launch });
    await rename(partial, image);
  }

  private async mount(args: string[]): Promise<void> {
    await runHostCommand('mount', args, { launch: this.options.launch });
  }

  /** Unmounts whatever is mounted at `dir` (mounts stacked there too); lazily when it is busy. */
  private async unmount(dir: string): Promise<void> {
    for (let i = 0; i < 8 && (await isMountPoint(dir)); i += 1) {
      await runHostCommand('umount', [dir], { launch: this.options.launch }).catch(() =>
        runHostCommand('umount', ['--lazy', dir], { launch: this.options.launch }),
      );
    }
  }
}

/** Whether something is mounted at `dir`: it is on another device than its parent (or is `/`). */
export async function isMountPoint(dir: string): Promise<boolean> {
  const [own, parent] = await Promise.all([
    lstat(dir).catch(() => undefined),
    lstat(path.dirname(dir)).catch(() => undefined),
  ]);
  if (!own?.isDirectory() || !parent) return false;
  return own.dev !== parent.dev || own.ino === parent.ino;
}

async function hasEntries(dir: string): Promise<boolean> {
  return (await readdir(dir).catch(() => [] as string[])).length > 0;
}
