import { existsSync } from 'node:fs';
import { HOST_PATH } from './host-root';
import { forkLauncher, type ProcessLauncher } from './launched-process';

/** A run's files grew past AGENT_WORKSPACE_MAX_BYTES: the run ends FAILED with `budget_exceeded`. */
export class RunDiskLimitError extends Error {
  override name = 'RunDiskLimitError';
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

/** The disk limit of one run: `check` throws RunDiskLimitError once its files take more than `maxBytes`. */
export interface RunDiskQuota {
  maxBytes: number;
  /** Bytes used now, or undefined when there is no limit. */
  usage(): Promise<number | undefined>;
  /** Throws RunDiskLimitError when the run's files may be over the limit and are. */
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

/**
 * The disk limit of a run. `usage` always measures (du: a process per call); `check` measures
 * only when the files could be over the limit by now: when the last measurement, plus what the
 * run could have written since at WRITE_BOUND_BYTES_PER_SECOND, reaches the limit. Steps that
 * follow each other quickly far below the limit then cost no `du` each.
 */
export function runDiskQuota(
  paths: string[],
  maxBytes: number,
  options: { now?: () => number; launch?: ProcessLauncher } = {},
): RunDiskQuota {
  const { now = Date.now, launch } = options;
  const key = paths.join('\0');
  const usage = async () => {
    if (maxBytes <= 0) return undefined;
    const bytes = await diskUsageBytes(paths, launch);
    if (lastMeasured.size >= MAX_REMEMBERED) lastMeasured.delete(lastMeasured.keys().next().value!);
    lastMeasured.delete(key);
    lastMeasured.set(key, { bytes, at: now() });
    return bytes;
  };
  return {
    maxBytes,
    usage,
    async check() {
      if (maxBytes <= 0) return;
      const last = lastMeasured.get(key);
      if (last && last.bytes + ((now() - last.at) / 1000) * WRITE_BOUND_BYTES_PER_SECOND < maxBytes) return;
      const used = await usage();
      if (used !== undefined && used > maxBytes) throw exceeded(used, maxBytes);
    },
  };
}

export function exceeded(used: number, maxBytes: number): RunDiskLimitError {
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return new RunDiskLimitError(
    `The run's files (workspace, home and tmp) take ${mib(used)} on disk, more than its limit of ${mib(maxBytes)} (AGENT_WORKSPACE_MAX_BYTES).`,
  );
}
