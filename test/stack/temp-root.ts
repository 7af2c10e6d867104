import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** What this jest process made (global setups and teardowns share the process and its globals). */
const state = globalThis as { __testTempRoot?: { root: string; previousTmpdir: string | undefined } };

/**
 * Points TMPDIR at a directory of this jest run's own, so that every temporary file of the tests,
 * of the service they start and of the tools it runs is removed with it at the end (a run used to
 * leave about 0.9 GB in /tmp: workspaces, image caches, test fixtures). Set before jest starts
 * its workers, which inherit it. World-writable and sticky like /tmp: processes of other uids
 * (PostgreSQL, a sandbox's uid) make their files there too. Made once per run, by whichever
 * project's setup comes first.
 */
export function enterTestTempRoot(): void {
  if (state.__testTempRoot) return;
  const previousTmpdir = process.env.TMPDIR;
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-jest-'));
  chmodSync(root, 0o1777);
  state.__testTempRoot = { root, previousTmpdir };
  process.env.TMPDIR = root;
}

/**
 * Removes the directory enterTestTempRoot made, and only that, with everything in it; TMPDIR is
 * what it was (a watch-mode rerun makes a new one).
 */
export function removeTestTempRoot(): void {
  const made = state.__testTempRoot;
  if (!made) return;
  delete state.__testTempRoot;
  if (made.previousTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = made.previousTmpdir;
  unmountUnder(made.root);
  try {
    rmSync(made.root, { recursive: true, force: true, maxRetries: 3 });
  } catch (err) {
    process.stderr.write(`could not remove the test run's temporary directory ${made.root}: ${String(err)}\n`);
  }
}

/**
 * Unmounts what the service mounted under `root` (runs' filesystems, AGENT_DISK_LIMITS=enforce,
 * of workspaces no test removed), deepest first, lazily: the directory can then go, and no loop
 * device or image outlives the test run.
 */
export function unmountUnder(root: string): void {
  const prefix = path.resolve(root) + path.sep;
  const mountPoints = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    .map((point) => point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point) => point.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
  for (const point of mountPoints) {
    try {
      execFileSync('umount', ['--lazy', point], { stdio: 'ignore' });
    } catch {
      // Gone with its parent already.
    }
  }
}
