import { rm } from 'node:fs/promises';
import path from 'node:path';
import { HOST_PATH } from './host-root';
import type { LaunchedProcess, ProcessLauncher } from './launched-process';
import { socketPath } from './socket-path';

/** How long a watcher may take to say it follows the filesystem, and to end once told to. */
const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * Where the checkpoints of a run ask its filesystem's watcher what changed (root's only: under
 * the disks' directory, or the worker's short socket directory when that path is too long).
 */
export function watchSocket(root: string, runId: string): string {
  return socketPath(path.join(root, '.disks'), `${runId}.watch`);
}

/**
 * One `sandbox-init -watch` per mounted run filesystem (watch.go): it follows every change there
 * with fanotify, so that a checkpoint looks at what changed instead of walking every file. A
 * watcher that cannot start (a kernel before 5.9, no fanotify in the worker's container) costs
 * nothing but time: checkpoints then walk everything, as they do with no filesystem of a run's own.
 */
export class RunDiskWatchers {
  private readonly running = new Map<string, { child: LaunchedProcess; exited: Promise<void> }>();
  /** Why the last watcher that failed to start did, for the worker's start-up check. */
  lastError: string | undefined;

  constructor(private readonly options: { root: string; initPath: string; launch: ProcessLauncher }) {}

  watching(runId: string): boolean {
    return this.running.has(runId);
  }

  /** Starts the run's watcher on its mounted filesystem (`stateDir`) unless one runs; resolves once it follows it. */
  async start(runId: string, stateDir: string): Promise<void> {
    if (this.running.has(runId)) return;
    const socket = watchSocket(this.options.root, runId);
    const args = ['-watch', stateDir, '-socket', socket, '-root', 'workspace=workspace,home=home'];
    const child = this.options.launch(this.options.initPath, args, {
      cwd: '/',
      env: { PATH: HOST_PATH },
      stdin: true,
      background: true,
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2048)));
    const exited = new Promise<void>((resolve) => {
      child.once('error', () => resolve());
      child.once('close', () => resolve());
    });
    const entry = { child, exited };
    this.running.set(runId, entry);
    void exited.then(() => {
      if (this.running.get(runId) === entry) this.running.delete(runId);
    });
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), START_TIMEOUT_MS);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (out.includes('ready\n')) resolve(true);
      });
      void exited.then(() => resolve(false));
      void exited.finally(() => clearTimeout(timer));
    });
    if (!ready) {
      this.lastError = stderr.trim() || 'it did not start in time';
      await this.stop(runId);
    }
  }

  /** Ends the run's watcher (before its filesystem is unmounted: the watcher holds it). */
  async stop(runId: string): Promise<void> {
    const entry = this.running.get(runId);
    if (entry) {
      this.running.delete(runId);
      entry.child.stdin?.end();
      const timer = setTimeout(() => entry.child.signal('SIGKILL'), STOP_TIMEOUT_MS);
      await entry.exited;
      clearTimeout(timer);
    }
    await rm(watchSocket(this.options.root, runId), { force: true });
  }
}
