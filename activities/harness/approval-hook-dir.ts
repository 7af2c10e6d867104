import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
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
