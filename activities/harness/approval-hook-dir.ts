import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { harnessHooksDir } from '../workspace/workspace-paths';

/**
 * The directory of one invocation's approval hook, outside the run's files: written by the
 * worker (its files owned by the worker, so the sandbox's user cannot change them even where
 * the directory is visible) and bound read-only into the sandbox at the same path.
 */
export interface ApprovalHookDir {
  dir: string;
  write(files: Record<string, string>): Promise<void>;
  remove(): Promise<void>;
}

export async function createApprovalHookDir(workspaceRoot: string): Promise<ApprovalHookDir> {
  const parent = harnessHooksDir(workspaceRoot);
  await mkdir(parent, { recursive: true });
  // Passable, not listable: a sandbox sees only its own invocation's directory.
  await chmod(parent, 0o711);
  const dir = path.join(parent, randomBytes(12).toString('base64url'));
  await mkdir(dir, { mode: 0o755 });
  await chmod(dir, 0o755);
  return {
    dir,
    async write(files) {
      for (const [name, content] of Object.entries(files)) {
        if (name.includes('/')) throw new Error(`an approval hook file is a plain name: ${name}`);
        await writeFile(path.join(dir, name), content, { mode: 0o644 });
      }
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Longer than any invocation may run (a step's 24 hours): a directory older is a dead worker's. */
export const STALE_HOOK_DIR_MS = 25 * 3600_000;

/**
 * Removes the hook directories a worker that died mid-invocation left behind (a live invocation
 * removes its own), by age; answers how many. The workspace sweeper calls it on each pass.
 */
export async function removeStaleApprovalHookDirs(workspaceRoot: string, now = Date.now()): Promise<number> {
  const parent = harnessHooksDir(workspaceRoot);
  const names = await readdir(parent).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const dir = path.join(parent, name);
    const modified = (await stat(dir).catch(() => undefined))?.mtimeMs;
    if (modified === undefined || now - modified < STALE_HOOK_DIR_MS) continue;
    await rm(dir, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
