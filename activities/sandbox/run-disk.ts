import { existsSync } from 'node:fs';
import { HOST_PATH } from './host-root';
import { forkLauncher, type ProcessLauncher } from './launched-process';
import type { RunDiskUsage } from './run-disks';
import type { Sandbox } from './sandbox';

/** A run's files reached AGENT_WORKSPACE_MAX_BYTES: the run ends FAILED with `budget_exceeded`. */
export class RunDiskLimitError extends Error {
  override name = 'RunDiskLimitError';
  /** What the tool that reached the limit printed (a command's output), for the model to see. */
  toolOutput?: string;
}

/**
 * Bytes the files under `paths` take on disk (GNU du, blocks allocated, one file system), as the
 * worker's user; `launch` starts du (the sandbox's spawn server, so that the worker does not
 * fork itself for it).
 */
export function diskUsageBytes(paths: string[], launch: ProcessLauncher = forkLauncher): Promise<number> {
  const present = paths.filter((p) => existsSync(p));
  if (present.length === 0) return Promise.resolve(0);
  return new Promise((resolve, reject) => {
    const du = launch('du', ['-s', '-c', '-B1', '-x', '--', ...present], { cwd: '/', env: { PATH: HOST_PATH } });
    let stdout = '';
    du.stdout.on('data', (chunk: Buffer) => {
      // The total is the last line: what comes before it is one line per path.
      if (stdout.length < 1024 * 1024) stdout += chunk.toString('utf8');
    });
    du.stderr.resume();
    du.once('error', reject);
    du.once('close', (code: number | null, signal: string | null) => {
      // du exits 1 when a file vanished while it counted: the total is still its answer.
      const total = /^(\d+)\s+total$/m.exec(stdout);
      if (total) resolve(Number(total[1]));
      else reject(new Error(`du (${signal ?? code}) printed no total: ${stdout.slice(0, 200)}`));
    });
  });
}

/** The disk limit of one run: `check` throws RunDiskLimitError once its files reach `maxBytes`. */
export interface RunDiskQuota {
  maxBytes: number;
  /** What the run's files take now, or undefined when there is no limit. */
  usage(): Promise<RunDiskUsage | undefined>;
  /** Throws RunDiskLimitError when the run's files may have reached the limit and have. */
  check(): Promise<void>;
}

/**
 * Fastest a run's processes are assumed to write to disk (bytes per second): between two
 * measurements a run's files can have grown by at most this much per second elapsed.
 */
export const WRITE_BOUND_BYTES_PER_SECOND = 4 * 1024 ** 3;

/** The last measurement of each run's files in this worker, by the run's paths. */
const lastMeasured = new Map<string, { bytes: number; at: number }>();
const MAX_REMEMBERED = 10_000;

/** What the quota asks of the run's sandbox. */
export type DiskSandbox = Pick<Sandbox, 'runPaths' | 'runDiskUsage' | 'hostLauncher'>;

/**
 * The disk limit of a run. On a filesystem of its own (AGENT_DISK_LIMITS=enforce) the kernel
 * enforces it and a measurement is a statfs. Otherwise the files are measured with du (a
 * process per call): `usage` always measures; `check` only when the files could be over the
 * limit by now (the last measurement, plus what the run could have written since at
 * WRITE_BOUND_BYTES_PER_SECOND, reaches the limit), so quick steps far below it cost no du.
 */
export function runDiskQuota(
  sandbox: DiskSandbox,
  runId: string,
  maxBytes: number,
  options: { now?: () => number } = {},
): RunDiskQuota {
  const { now = Date.now } = options;
  const paths = sandbox.runPaths(runId);
  const key = paths.join('\0');
  const measured = async (): Promise<RunDiskUsage> => {
    const bytes = await diskUsageBytes(paths, sandbox.hostLauncher);
    if (lastMeasured.size >= MAX_REMEMBERED) lastMeasured.delete(lastMeasured.keys().next().value!);
    lastMeasured.delete(key);
    lastMeasured.set(key, { bytes, at: now() });
    return { bytes, reached: bytes > maxBytes, enforced: false };
  };
  const usage = async () => {
    if (maxBytes <= 0) return undefined;
    return (await sandbox.runDiskUsage?.(runId)) ?? (await measured());
  };
  return {
    maxBytes,
    usage,
    async check() {
      if (maxBytes <= 0) return;
      let used = await sandbox.runDiskUsage?.(runId);
      if (!used) {
        const last = lastMeasured.get(key);
        if (last && last.bytes + ((now() - last.at) / 1000) * WRITE_BOUND_BYTES_PER_SECOND < maxBytes) return;
        used = await measured();
      }
      if (used.reached) throw exceeded(used, maxBytes);
    },
  };
}

export function exceeded(used: RunDiskUsage, maxBytes: number): RunDiskLimitError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const limit = `its limit of ${mib(maxBytes)} (AGENT_WORKSPACE_MAX_BYTES)`;
  if (used.outOfFiles) {
    return new RunDiskLimitError(
      `The run's files (workspace, home and tmp) are as many as ${limit} allows, one per 8 KiB: making another fails with "No space left on device".`,
    );
  }
  if (used.enforced) {
    return new RunDiskLimitError(
      `The run's files (workspace, home and tmp) take ${mib(used.bytes)} on disk and reached ${limit}: writes past it fail with "No space left on device".`,
    );
  }
  return new RunDiskLimitError(
    `The run's files (workspace, home and tmp) take ${mib(used.bytes)} on disk, more than ${limit}.`,
  );
}
