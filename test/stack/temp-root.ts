import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT_VARIABLE = 'AGENT_RUNS_TEST_TMP';

/**
 * Points TMPDIR at a directory of this jest run's own, so that every temporary file of the tests,
 * of the service they start and of the tools it runs is removed with it at the end (a run used to
 * leave about 0.9 GB in /tmp: workspaces, image caches, test fixtures). Set before jest starts
 * its workers, which inherit it. World-writable and sticky like /tmp: processes of other uids
 * (PostgreSQL, a sandbox's uid) make their files there too.
 */
export function enterTestTempRoot(): void {
  if (process.env[ROOT_VARIABLE]) return;
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-jest-'));
  chmodSync(root, 0o1777);
  process.env[ROOT_VARIABLE] = root;
  process.env.TMPDIR = root;
}

/** Removes this run's temporary directory (enterTestTempRoot) and everything in it. */
export function removeTestTempRoot(): void {
  const root = process.env[ROOT_VARIABLE];
  if (!root) return;
  try {
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    process.stderr.write(`could not remove the test run's temporary directory ${root}: ${String(err)}\n`);
  }
}
