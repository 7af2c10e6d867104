import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The official Python client this service is checked against. */
export const PYTHON_CLIENT = 'oz-agent-sdk==0.15.0';

/**
 * A virtual environment with the official Python client, made once per machine in the cache
 * (like the Temporal CLI): `.ci/run` makes it before the tests, a laptop on the first run.
 */
export async function ensurePythonClient(): Promise<string> {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', 'python-client', PYTHON_CLIENT.replace('==', '-'));
  const python = path.join(dir, 'bin', 'python');
  if (existsSync(python)) return python;
  mkdirSync(path.dirname(dir), { recursive: true });
  // Built aside and moved into place, so that an interrupted install is never taken for a whole one.
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  await run('python3', ['-m', 'venv', building]);
  await run(path.join(building, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', PYTHON_CLIENT], {
    timeout: 300_000,
  });
  if (!existsSync(python)) renameSync(building, dir);
  else rmSync(building, { recursive: true, force: true });
  return python;
}
