import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Written last: a directory without it is an interrupted install, made again. */
const COMPLETE_MARKER = '.agent-runs-complete';

/**
 * A virtual environment with one pinned PyPI requirement (`name==version`), made once per
 * machine in the cache under `agent-runs/<cacheName>/<name>-<version>` (like the Temporal CLI):
 * `.ci/run` makes it before the tests, a laptop on the first run. Returns the venv's directory.
 */
export async function ensurePythonVenv(cacheName: string, requirement: string): Promise<string> {
  if (!/^[A-Za-z0-9._-]+==[A-Za-z0-9._-]+$/.test(requirement)) {
    throw new Error(`Pin the requirement as name==version (got "${requirement}").`);
  }
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', cacheName, requirement.replace('==', '-'));
  const marker = path.join(dir, COMPLETE_MARKER);
  if (existsSync(marker)) return dir;
  // Made where it stays: a venv's scripts name its python by absolute path, so it cannot be moved.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.dirname(dir), { recursive: true });
  await run('python3', ['-m', 'venv', dir]);
  await run(path.join(dir, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', requirement], {
    timeout: 600_000,
  });
  writeFileSync(marker, `${requirement}\n`);
  return dir;
}
