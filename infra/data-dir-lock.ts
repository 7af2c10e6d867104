import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

export class DataDirInUseError extends Error {}

/** How long a lock whose holder stopped updating it is taken as stale (its holder died). */
const STALE_MS = 10_000;

function holderOf(file: string): { pid: number; since: string } | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; since?: unknown };
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, since: String(parsed.since) } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Holds AGENT_RUNS_DATA_DIR for this process (`<dir>/instance.lock`, with proper-lockfile), so
 * that a second `npm start` on the same directory says so at once instead of failing port by
 * port. A lock left by a process that is gone (kill -9) is taken over. Returns the release.
 */
export async function lockDataDir(dataDir: string, onLost: (err: Error) => void): Promise<() => Promise<void>> {
  mkdirSync(dataDir, { recursive: true });
  const target = path.join(dataDir, 'instance');
  const holderFile = path.join(dataDir, 'instance.pid');
  writeFileSync(target, '', { flag: 'a' });
  const acquire = () =>
    lockfile.lock(target, { stale: STALE_MS, update: STALE_MS / 2, retries: 0, onCompromised: onLost });
  let release: () => Promise<void>;
  try {
    release = await acquire();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const holder = holderOf(holderFile);
    if (!holder || isAlive(holder.pid)) {
      throw new DataDirInUseError(
        `Another instance${holder ? ` (pid ${holder.pid}, started ${holder.since})` : ''} is using ` +
          `AGENT_RUNS_DATA_DIR=${dataDir}. Stop it first, or set AGENT_RUNS_DATA_DIR to another directory to run a second one.`,
      );
    }
    // Its holder is gone without releasing it.
    rmSync(`${target}.lock`, { recursive: true, force: true });
    release = await acquire();
  }
  writeFileSync(holderFile, JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));
  return async () => {
    rmSync(holderFile, { force: true });
    await release().catch(() => undefined);
  };
}
