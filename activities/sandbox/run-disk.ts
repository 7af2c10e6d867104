import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

/** A run's files grew past AGENT_WORKSPACE_MAX_BYTES: the run ends FAILED with `budget_exceeded`. */
export class RunDiskLimitError extends Error {
  override name = 'RunDiskLimitError';
}

/** Bytes the files under `paths` take on disk (GNU du, blocks allocated, one file system). */
export function diskUsageBytes(paths: string[]): Promise<number> {
  const present = paths.filter((p) => existsSync(p));
  if (present.length === 0) return Promise.resolve(0);
  return new Promise((resolve, reject) =>
    execFile('du', ['-s', '-c', '-B1', '-x', '--', ...present], { maxBuffer: 1024 * 1024 }, (err, stdout) => {
      // du exits 1 when a file vanished while it counted: the total is still its answer.
      const total = /^(\d+)\s+total$/m.exec(stdout);
      if (total) resolve(Number(total[1]));
      else reject(err ?? new Error(`du printed no total: ${stdout.slice(0, 200)}`));
    }),
  );
}

/** The disk limit of one run: `check` throws RunDiskLimitError once its files take more than `maxBytes`. */
export interface RunDiskQuota {
  maxBytes: number;
  /** Bytes used now, or undefined when there is no limit. */
  usage(): Promise<number | undefined>;
  check(): Promise<void>;
}

export function runDiskQuota(paths: string[], maxBytes: number): RunDiskQuota {
  const usage = async () => (maxBytes > 0 ? diskUsageBytes(paths) : undefined);
  return {
    maxBytes,
    usage,
    async check() {
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
